"""The ``streamlearn`` command: train, predict, evaluate, info, convert and the demo.

Every command streams its data chunk by chunk, shows progress bars (rows/s, ETA) on stderr
when stderr is a terminal (``--quiet`` turns them off), and exits with 0 on success, 1 on a
data or model problem (one line on stderr naming it) and 2 on a usage error.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import json
import math
import os
import re
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar, NoReturn

import click
import numpy as np

from streamlearn import __version__
from streamlearn.atomic_file import AtomicOutput, output_target
from streamlearn.data.categories import number_text
from streamlearn.engine.accounting import PassLog, human_bytes, recording
from streamlearn.errors import (
    DataError,
    LabelError,
    MissingValueError,
    ModelFileError,
    SchemaError,
    StreamlearnError,
)
from streamlearn.io.file_location import local_path, remote_location, upload
from streamlearn.models.registry import MODELS, import_estimator
from streamlearn.warning_origin import library_rows

# -- the models the command line can train ------------------------------------------------
#: Shared flags of ``train`` -> constructor parameter names they may set, first match wins.
COMMON_FLAGS: dict[str, tuple[str, ...]] = {
    "epochs": ("epochs",),
    "C": ("C",),
    "lam": ("lam",),
    "seed": ("random_state", "seed"),
}
#: Constructor parameters the command line sets itself.
MANAGED_PARAMS = ("engine",)
#: ``train`` without ``--model``: the model for each kind of target.
DEFAULT_MODELS = {"classification": "additive", "regression": "sppr"}
#: ... and for sparse rows, which projection pursuit cannot take.
DEFAULT_SPARSE_MODELS = {"classification": "additive", "regression": "supersparse"}
#: Seconds to wait for the scheduler given by ``--scheduler``.
CONNECT_TIMEOUT = 10


def model_class(name: str, task: str) -> type:
    """The estimator class of command-line model ``name`` for a ``task`` target."""
    entry = MODELS[name]
    path = entry.classifier if task == "classification" else entry.regressor
    if path is None:
        kind = "classification labels" if task == "classification" else "numeric values"
        raise click.ClickException(
            f"model {name!r} handles {' and '.join(entry.tasks)} targets; the target holds "
            f"{kind}")
    try:
        cls = import_estimator(path)
    except ImportError:
        module_name, _, class_name = path.partition(":")
        raise click.ClickException(
            f"model {name!r} ({module_name}.{class_name}) is not available in this version of "
            f"streamlearn ({__version__})") from None
    return cls


def constructor_params(cls: type) -> list[str]:
    """Names of the constructor parameters of an estimator class."""
    names = getattr(cls, "_param_names", None)
    if callable(names):
        return list(names())
    signature = inspect.signature(cls.__init__)  # type: ignore[misc]
    return [p.name for p in signature.parameters.values()
            if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


#: Python's spellings of JSON's constants, which --param takes too.
PYTHON_CONSTANTS = {"None": None, "True": True, "False": False}


def parse_param(text: str) -> tuple[str, Any]:
    """``NAME=VALUE`` with VALUE read as JSON (numbers, true/false, null, lists; Python's
    None, True and False too), else a string."""
    name, sep, raw = text.partition("=")
    name = name.strip()
    if not sep or not name:
        raise click.BadParameter(f"{text!r} is not NAME=VALUE", param_hint="'--param'")
    if raw.strip() in PYTHON_CONSTANTS:
        return name, PYTHON_CONSTANTS[raw.strip()]
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return name, value


def parse_search(text: str) -> tuple[str, list[Any]]:
    """``NAME=V1,V2,...`` (or ``NAME=[V1, V2]`` in JSON): a parameter and the values a
    search tries, each read as ``--param`` reads a value."""
    name, sep, raw = text.partition("=")
    name = name.strip()
    if not sep or not name or not raw.strip():
        raise click.BadParameter(f"{text!r} is not NAME=V1,V2,...", param_hint="'--search'")
    try:
        values = json.loads(raw)
    except json.JSONDecodeError:
        values = None
    if not isinstance(values, list):
        values = [parse_param(f"{name}={item.strip()}")[1] for item in raw.split(",")]
    if not values:
        raise click.BadParameter(f"{text!r} lists no value", param_hint="'--search'")
    return name, values


def model_params(cls: type, common: dict[str, Any],
                 params: Sequence[tuple[str, Any]]) -> dict[str, Any]:
    """Constructor arguments from the shared flags and ``--param`` options.

    Raises a usage error naming the valid parameters when a name does not exist.
    """
    valid = [p for p in constructor_params(cls) if p not in MANAGED_PARAMS]
    out: dict[str, Any] = {}
    for flag, value in common.items():
        if value is None:
            continue
        name = next((n for n in COMMON_FLAGS[flag] if n in valid), None)
        if name is None:
            raise click.UsageError(
                f"--{flag} does not apply to {cls.__name__}; its parameters are "
                f"{', '.join(valid)}")
        out[name] = value
    for name, value in params:
        if name not in valid:
            raise click.BadParameter(
                f"{cls.__name__} has no parameter {name!r}; valid names: {', '.join(valid)}",
                param_hint="'--param'")
        out[name] = value
    return out


# -- shared plumbing ----------------------------------------------------------------------
def _user_errors(command: Callable[..., Any]) -> Callable[..., Any]:
    """Report streamlearn errors as one line on stderr with exit code 1, no traceback."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except StreamlearnError as exc:
            message = f"{type(exc).__name__}: {exc}"
            if isinstance(exc, LabelError) and "task='regression'" in message:
                # the library's advice names the Python parameter; here, the option
                message += ("; on the command line, --model sppr or --model supersparse "
                            "trains a regressor")
            raise click.ClickException(message) from exc
        except BrokenPipeError:
            _reader_went_away()
        except OSError as exc:  # the system's refusal (a full disk, no permission), not ours
            raise click.ClickException(f"{type(exc).__name__}: {exc}") from exc

    return wrapper


def _reader_went_away() -> NoReturn:
    """The reader of our output closed it (``streamlearn info ... | head``): stop quietly,
    as command-line tools do, with exit code 1 and no message. Standard output is pointed
    at the null device so that flushing it at exit raises nothing more."""
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, sys.stdout.fileno())
    sys.exit(1)


@contextlib.contextmanager
def _writing(what: str, out: str | os.PathLike[str]) -> Iterator[None]:
    """Report an ``OSError`` met while writing ``what`` to ``out`` (a full disk, a directory
    that refuses files) as one line naming both; streamlearn's own errors pass as they are."""
    try:
        yield
    except (StreamlearnError, BrokenPipeError):  # a closed pipe: the reader went away
        raise
    except OSError as exc:
        raise click.ClickException(f"could not write {what} to {os.fspath(out)}: {exc}") \
            from exc


#: A column name in double quotes, then a comma or the end: the quotes keep commas and
#: spaces in the name, ``""`` stands for a quote.
_QUOTED_NAME = re.compile(r'"((?:[^"]|"")*)"\s*(,|$)')


def _names(values: Sequence[str]) -> list[str] | None:
    """The columns named by the values of a repeatable ``--features`` or ``--exclude``
    (None when it was not given): each value a comma-separated list of names, stripped of
    spaces, but for a name in double quotes, taken as written (``"c,d"``, ``" price"``).
    """
    if not values:
        return None
    names: list[str] = []
    for value in values:
        rest = value
        while True:
            rest = rest.lstrip()
            if rest.startswith('"'):
                quoted = _QUOTED_NAME.match(rest)
                if quoted is None:
                    raise click.BadParameter(
                        f"{value!r}: a column name in double quotes ends with a quote, then "
                        'a comma or the end (a quote within it is written "")')
                names.append(quoted.group(1).replace('""', '"'))
                rest = rest[quoted.end():]
                if not quoted.group(2):
                    break
                continue
            name, comma, rest = rest.partition(",")
            if name.strip():
                names.append(name.strip())
            if not comma:
                break
    return names


def _column_names(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]
                  ) -> list[str] | None:
    """``--features``, ``--exclude``: the names given (:func:`_names`), checked before
    anything is read."""
    return _names(values)


def _nan_policy(value: str) -> str | float:
    if value in ("raise", "drop", "impute"):
        return value
    try:
        fill = float(value)
    except ValueError:
        fill = math.nan
    if not math.isfinite(fill):
        raise click.BadParameter(f"{value!r}: use 'raise', 'drop', 'impute' or a finite "
                                 "number to fill with")
    return fill


def _hash_features(ctx: click.Context, param: click.Parameter, value: int | None
                   ) -> int | None:
    """``--hash-features``: a power of two, checked before anything is read."""
    from streamlearn.data.hashing import check_hash_features

    if value is None:
        return None
    try:
        return check_hash_features(value, "--hash-features")
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _options(*options: Callable[..., Any]) -> Callable[..., Any]:
    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        for option in reversed(options):
            command = option(command)
        return command

    return decorate


_target_option = click.option("--target", "-t",
                              help="Target column (zarr X/y stores default to y).")
_storage_options = _options(
    click.option("--format", "fmt", type=click.Choice(["parquet", "zarr", "svmlight", "csv"]),
                 help="Storage format when the path does not tell."),
    click.option("--chunk-rows", type=click.IntRange(min=1),
                 help="Rows per chunk (default: about 16 MiB of features, "
                 "1,024 to 1,048,576 rows)."),
    click.option("--nan-policy", default="raise",
                 help="NaN/inf in features: raise, drop, a number to fill with, or impute "
                 "(NaN is a missing value: predicted from the row's other columns, and an "
                 "indicator column). "
                 "Without this option, train reads as raise and, on finding a NaN, trains "
                 "again under impute (not when resuming from --checkpoint); info counts "
                 "missing values; a model trained with impute predicts and scores data "
                 "so; the rest read as raise."),
)
#: Options of every command that opens a dataset and chooses its columns.
data_options = _options(
    _target_option,
    click.option("--features", multiple=True, callback=_column_names,
                 help="Comma-separated feature columns (default: all others); repeatable. "
                 'Quote a name holding a comma or edge spaces: --features \'"c,d"\'.'),
    click.option("--exclude", multiple=True, callback=_column_names,
                 help="Comma-separated columns to leave out; repeatable, quoted names as "
                 "for --features."),
    _storage_options,
)
_quiet_option = click.option("--quiet", "-q", is_flag=True,
                             help="No progress bars or timing lines on stderr.")


def _open(data: str, target: str | None, features: Sequence[str] | None,
          exclude: Sequence[str] | None, fmt: str | None, chunk_rows: int | None,
          nan_policy: str, **more: Any) -> Any:
    """Open ``data`` with the columns ``features`` and ``exclude`` name (names, as
    :func:`_names` gives them from the options)."""
    from streamlearn.data.open import open_dataset

    return open_dataset(
        data, target=target, features=None if features is None else list(features),
        exclude=list(exclude or ()),
        format=fmt, chunk_rows=chunk_rows, nan_policy=_nan_policy(nan_policy), **more,
    )


def _progress(quiet: bool) -> bool | None:
    """Progress argument of engines: off with ``--quiet``, else when stderr is a terminal."""
    return False if quiet else None


def _engine(quiet: bool, chunk_rows: int | None = None) -> Any:
    from streamlearn.engine.local import LocalEngine

    return LocalEngine(progress=_progress(quiet), chunk_rows=chunk_rows)


@dataclass
class ClusterEngine:
    """The engine a command runs its passes on, and a line saying where that is.

    Attributes
    ----------
    engine : DaskEngine or None
        None: the model's own engine (a :class:`LocalEngine` in this process).
    description : str
        Empty for the local engine.
    """

    engine: Any = None
    description: str = ""


@contextlib.contextmanager
def cluster_engine(workers: int | None, scheduler: str | None, *, quiet: bool,
                   chunk_rows: int | None = None) -> Iterator[ClusterEngine]:
    """A :class:`DaskEngine` on a new ``LocalCluster`` or an existing cluster, for one command.

    ``workers``: start a ``LocalCluster`` of that many single-thread worker processes on
    loopback, closed on exit. ``scheduler``: connect to the cluster at that address (the
    cluster stays up). Neither: the local engine. The client is the current one inside the
    block, so ``engine="dask"`` finds it too.
    """
    if workers is None and scheduler is None:
        yield ClusterEngine()
        return
    from distributed import Client

    from streamlearn.engine.dask_engine import DaskEngine
    from streamlearn.engine.local_cluster import local_cluster

    cluster = None
    try:
        if workers is not None:
            cluster = local_cluster(workers)
            client = Client(cluster, set_as_default=False)
        else:
            client = Client(scheduler, set_as_default=False, timeout=CONNECT_TIMEOUT)
    except (OSError, TimeoutError, ValueError) as exc:
        if cluster is not None:
            cluster.close()
        where = f"a LocalCluster of {workers} workers" if workers else f"scheduler {scheduler}"
        raise click.ClickException(f"cannot start or reach {where}: "
                                   f"{type(exc).__name__}: {exc}") from exc
    engine = DaskEngine(client, chunk_rows=chunk_rows, progress=_progress(quiet))
    try:
        n = len(client.scheduler_info().get("workers", {}))
        if cluster is not None:
            where = f"dask LocalCluster of {n} worker process{'es' * (n != 1)}"
        else:
            where = f"dask cluster at {scheduler}, {n} worker{'s' * (n != 1)}"
        with client.as_current():
            yield ClusterEngine(engine, f"{where} ({engine.n_threads} threads)")
    finally:
        engine.close()
        client.close()
        if cluster is not None:
            cluster.close()


def _rate(rows: int, seconds: float) -> str:
    return f"{rows / max(seconds, 1e-9):,.0f} rows/s"


def _load_model(path: str) -> Any:
    from streamlearn.io import load_model

    return load_model(path)


def _option_given(name: str) -> bool:
    """Whether the running command's option ``name`` was given (on the command line or
    from the environment), rather than left at its default."""
    context = click.get_current_context(silent=True)
    source = None if context is None else context.get_parameter_source(name)
    return source not in (None, click.core.ParameterSource.DEFAULT)


def _is_classifier(model: Any) -> bool:
    return getattr(model, "classes_", None) is not None


def _open_for_model(model: Any, data: str, *, target: str | None, fmt: str | None,
                    chunk_rows: int | None, nan_policy: str) -> Any:
    """Open ``data`` with the features ``model`` was trained on, checking they are there.

    Columns are matched by name; a model trained on unnamed columns (``x0, x1, ...``) takes
    columns of those names when the data has them all, else the data's feature columns by
    position, and then only their number must agree (sparse rows may have fewer columns:
    an svmlight file's largest index may be below the training data's; the others are
    zeros). A model trained on svmlight text reads svmlight data with the training file's
    index base and its number of features.
    """
    from streamlearn.data.open import (
        check_coded_as_trained,
        check_hashed_as_trained,
        reading_for,
    )
    from streamlearn.data.sources.base import default_feature_names
    from streamlearn.models.base import feature_names_of

    if nan_policy == "raise" and hasattr(model, "missing_values_") \
            and not _option_given("nan_policy"):
        nan_policy = "impute"  # the model reads NaN as a missing value, as in training
    expected = list(feature_names_of(model)) if hasattr(model, "n_features_in_") else []
    if not expected:
        raise SchemaError(f"the {type(model).__name__} does not record its feature names")
    # svmlight indices as the training file's were read (a file without index 0 would
    # otherwise be taken as one-based, every feature shifted by one), an index beyond the
    # model's features an error that names its line; hashed rows hashed the same way
    svmlight = reading_for(model, data, fmt)
    categories = getattr(model, "categories_", None)
    task = None
    if target is not None:
        task = "classification" if _is_classifier(model) else "regression"
    if "hash_features" in svmlight:  # the same columns hashed as the training rows'
        columns = svmlight.pop("features", None)
        dataset = _open(data, target, columns or None, None, fmt,
                        chunk_rows, nan_policy, task=task, **svmlight)
        check_hashed_as_trained(model, dataset)  # the columns of the types hashed in fit
        return dataset
    shown = _shown(expected)
    if expected == default_feature_names(len(expected)):
        dataset = _open(data, target, None, None, fmt, chunk_rows, nan_policy, task=task,
                        categories=categories, **svmlight)
        if list(dataset.feature_names) != expected and set(expected) <= set(
                dataset.feature_names):
            # columns really named x0, x1, ... (next to others, such as the target): by name
            dataset = _open(data, target, expected, None, fmt, chunk_rows,
                            nan_policy, task=task, categories=categories, **svmlight)
        narrower_sparse = dataset.is_sparse and dataset.n_features < len(expected)
        if dataset.n_features != len(expected) and not narrower_sparse:
            raise SchemaError(
                f"the data has {dataset.n_features} feature columns "
                f"({_shown(list(dataset.feature_names))}); the model was trained on "
                f"{len(expected)}")
        check_coded_as_trained(model, dataset)
        return dataset
    try:
        dataset = _open(data, target, expected, None, fmt, chunk_rows, nan_policy,
                        task=task, categories=categories, **svmlight)
    except SchemaError as exc:
        if not str(exc).startswith("feature column(s)"):  # the target's, or another error
            raise
        raise SchemaError(f"the data lacks features the model was trained on "
                          f"({len(expected)} features: {shown}): {exc}") from exc
    check_coded_as_trained(model, dataset)
    return dataset


def _shown(names: Sequence[Any], limit: int = 10) -> str:
    items = ", ".join(str(n) for n in list(names)[:limit])
    return f"{items}{', ...' if len(names) > limit else ''}"


def _format_metric(value: Any) -> str:
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:.4f}"
    return str(value)


def metrics_table(metrics: dict[str, Any], classes: Sequence[Any] | None = None) -> str:
    """Metrics as aligned text: one line per scalar, then the confusion matrix if any."""
    scalars = [(k, v) for k, v in metrics.items() if not isinstance(v, list | dict)]
    width = max((len(k) for k, _ in scalars), default=0)
    lines = [f"{k.ljust(width)}  {_format_metric(v)}" for k, v in scalars]
    confusion = metrics.get("confusion_matrix")
    if confusion:
        labels = [str(c) for c in (classes if classes is not None else range(len(confusion)))]
        cells = [[_format_metric(v) for v in row] for row in confusion]
        w = max(len(s) for s in [*labels, *(c for row in cells for c in row)])
        lines += ["", "confusion matrix (rows: true class, columns: predicted)",
                  " " * (w + 2) + " ".join(s.rjust(w) for s in labels)]
        lines += [f"{label.rjust(w)}  " + " ".join(c.rjust(w) for c in row)
                  for label, row in zip(labels, cells, strict=True)]
    return "\n".join(lines)


def _json_ready(value: Any) -> Any:
    """Metrics as strict JSON: NaN becomes null, numpy scalars plain numbers."""
    if isinstance(value, dict):
        return {str(k): _json_ready(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_ready(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _hash_option(more: str) -> Any:
    """The ``--hash-features N`` option, its help ending with ``more``."""
    return click.option(
        "--hash-features", type=int, callback=_hash_features, metavar="N",
        help="Hash the features into N columns (a power of two, e.g. 262144 = 2**18): "
             "svmlight entries by name, parquet columns by name and value (string and "
             "list<string> columns as tokens). " + more)


# -- the command group --------------------------------------------------------------------
class _Commands(click.Group):
    """The command group, which also answers to scikit-learn's word for a command:
    ``streamlearn fit`` is ``streamlearn train``."""

    #: Other names of commands (not listed in the help).
    ALIASES: ClassVar[dict[str, str]] = {"fit": "train"}

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return super().get_command(ctx, self.ALIASES.get(cmd_name, cmd_name))


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="streamlearn")
def cli() -> None:
    """Train nonlinear models on data larger than memory, streaming it chunk by chunk.

    \b
    Examples:
      streamlearn demo
      streamlearn info train.parquet --target label
      streamlearn train train.parquet --target label --model additive --out model.slm
      streamlearn predict model.slm test.parquet --out predictions.parquet --proba
      streamlearn evaluate model.slm test.parquet --target label
      streamlearn explain model.slm train.parquet --out model_report
      streamlearn convert train.parquet --target label --out train.zarr
    """


@cli.command()
@click.argument("data")
@data_options
@_hash_option("Needed for svmlight files whose features are words.")
@_quiet_option
@_user_errors
def info(data: str, target: str | None, features: list[str] | None, exclude: list[str] | None,
         fmt: str | None, chunk_rows: int | None, nan_policy: str,
         hash_features: int | None, quiet: bool) -> None:
    """Print the schema of DATA and per-feature statistics from one streamed pass.

    DATA is a parquet, CSV or svmlight file or directory, a zarr store, or an fsspec URL
    of any of them. A missing value (NaN, an empty cell) is counted, not refused: a
    feature's count is that of its values that are there (--nan-policy raise refuses them,
    drop leaves their rows out).

    \b
    Examples:
      streamlearn info train.parquet --target label
      streamlearn info s3://bucket/train.zarr
      streamlearn info data/ --exclude id --nan-policy drop
    """
    from streamlearn.engine.describe import describe

    # data of one class are described too (training on them is what needs two)
    hashing = {} if hash_features is None else {"hash_features": hash_features}
    if nan_policy == "raise" and not _option_given("nan_policy"):
        nan_policy = "impute"  # missing values are counted per feature, not refused
    dataset = _open(data, target, features, exclude, fmt, chunk_rows,
                    nan_policy, **hashing).with_any_classes()
    click.echo(dataset.schema)
    click.echo("")
    started = time.perf_counter()
    summary = describe(dataset, engine=_engine(quiet))
    elapsed = time.perf_counter() - started
    click.echo(summary)
    if not quiet:
        click.echo(f"\n{dataset.n_rows:,} rows streamed in {elapsed:.2f} s "
                   f"({_rate(dataset.n_rows, elapsed)})", err=True)


_MODEL_HELP = "\n".join(
    f"  {name:<12} {entry.about} ({', '.join(entry.tasks)}: "
    f"{', '.join(p.rpartition(':')[2] for p in entry.paths)})"
    for name, entry in MODELS.items())


@dataclass(frozen=True)
class ChosenModel:
    """``--model``: a command-line model name, and the task its estimator class fixes when
    the class was named (None: the target decides)."""

    name: str
    task: str | None = None


class ModelChoice(click.Choice):
    """A model's command-line name, or the name of one of its estimator classes
    (``SuperSparseClassifier``, which also fixes the task), in any case."""

    def __init__(self) -> None:
        super().__init__(list(MODELS), case_sensitive=False)
        self.by_class = {
            path.rpartition(":")[2].lower(): ChosenModel(
                name, "classification" if path == entry.classifier else "regression")
            for name, entry in MODELS.items() for path in entry.paths}

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        if isinstance(value, ChosenModel):
            return value
        chosen = self.by_class.get(str(value).strip().lower())
        return chosen if chosen is not None else ChosenModel(
            super().convert(value, param, ctx))


@cli.command(epilog="\b\nModels:\n" + _MODEL_HELP)
@click.argument("data")
@data_options
@click.option("--weight", "-w", help="Sample-weight column.")
@click.option("--model", "-m", "model_name", type=ModelChoice(),
              help="Which model to train, by its name or its estimator's class name (see "
                   "below); by default additive for a class target, sppr for a numeric one.")
@click.option("--out", "-o", required=True, type=click.Path(dir_okay=False),
              help="Model file to write (conventionally *.slm).")
@click.option("--epochs", type=click.IntRange(min=1), help="Passes of the sequential solver.")
@click.option("--C", "C", type=click.FloatRange(min=0, min_open=True),
              help="Penalty of the losses (larger: less regularisation).")
@click.option("--lam", type=click.FloatRange(min=0, min_open=True),
              help="Regularisation strength (overrides --C where a model has both).")
@click.option("--seed", type=int, help="Random seed (shuffling, initialisation).")
@click.option("--param", "-p", "params", multiple=True, metavar="NAME=VALUE",
              callback=lambda ctx, param, values: [parse_param(v) for v in values],
              help="Any constructor parameter of the model (repeatable); VALUE is read as "
                   "JSON (20, 0.5, true, null, [1,2]) or else taken as a string.")
@click.option("--search", "-s", "search", multiple=True, metavar="NAME=V1,V2,...",
              callback=lambda ctx, param, values: [parse_search(v) for v in values],
              help="Tune this parameter over these values inside the stream (repeatable: "
                   "the grid is every combination), by StreamSearchCV; the best setting is "
                   "trained on all rows and saved.")
@click.option("--train-score/--no-train-score", default=True, show_default=True,
              help="Score the model on the training data (one more pass).")
@click.option("--workers", type=click.IntRange(min=1),
              help="Train on a dask LocalCluster of this many worker processes (loopback).")
@click.option("--scheduler", metavar="ADDRESS",
              help="Train on the dask cluster of this scheduler (e.g. tcp://host:8786); its "
                   "workers must reach DATA.")
@click.option("--checkpoint", type=click.Path(file_okay=False), metavar="DIR",
              help="Save progress in DIR; the same command run again after a crash or a "
                   "kill resumes there and ends with the same model.")
@click.option("--checkpoint-every", type=click.IntRange(min=1), default=20, show_default=True,
              help="Chunks between two checkpoint writes (and at the end of every pass).")
@_hash_option("The model keeps N, and predict and evaluate hash their data the same "
              "way.")
@_quiet_option
@_user_errors
def train(data: str, target: str | None, features: list[str] | None, exclude: list[str] | None,
          fmt: str | None, chunk_rows: int | None, nan_policy: str, weight: str | None,
          model_name: ChosenModel | None, out: str, epochs: int | None, C: float | None,
          lam: float | None,
          seed: int | None, params: list[tuple[str, Any]],
          search: list[tuple[str, list[Any]]], train_score: bool,
          workers: int | None, scheduler: str | None, checkpoint: str | None,
          checkpoint_every: int, hash_features: int | None, quiet: bool) -> None:
    """Train a model on DATA, streaming it, and save it to --out.

    DATA is a parquet file or directory, a zarr store, svmlight or CSV files, or an fsspec
    URL of any of them. Without --model, a class target trains additive and a numeric
    target sppr, or supersparse on sparse rows (the target's type decides, as
    open_dataset infers it). Shared
    options (--epochs, --C, --lam, --chunk-rows, --seed) set the model's parameter of that
    name; --param NAME=VALUE sets any other (a wrong name lists the valid ones).

    With --search NAME=V1,V2,... (repeatable) the settings of the grid are trained side by
    side in the same passes and the worse half dropped at each rung (StreamSearchCV, for
    the models with partial_fit: additive, mixture, supersparse); the best is then trained
    on all rows, saved, and every setting's held-out score printed.

    With --workers N the passes run on a dask LocalCluster of N single-thread worker
    processes started for this command; with --scheduler ADDRESS on an existing dask
    cluster, whose workers open DATA themselves (a path they all reach or an fsspec URL).

    \b
    Examples:
      streamlearn train train.parquet -t label -m additive -o model.slm
      streamlearn train train.parquet -t label -m additive \\
          --search C=0.1,1,10 --search n_bases=10,20 -o tuned.slm
      streamlearn train train.parquet -t label -m additive --epochs 2 \\
          -p embedding=fourier -p n_terms=6 -o fourier.slm
      streamlearn train data.zarr -m additive -p solver=dcd --C 10 -o dcd.slm
      streamlearn train houses.parquet -t price -m sppr --exclude id -o price.slm
      streamlearn train data/ -t label -m additive --workers 4 -o model.slm
      streamlearn train s3://bucket/train.zarr -m additive \\
          --scheduler tcp://scheduler:8786 -o model.slm
      streamlearn train big/ -t label -m mixture --checkpoint big.ckpt -o mix.slm
    """
    if workers is not None and scheduler is not None:
        raise click.UsageError("--workers starts a local cluster and --scheduler connects to "
                               "one: give only one of them")
    _refuse_process_memory(out)
    _refuse_overwriting_inputs(out, DATA=data)
    _check_writable(out)  # before the training, whose model would have nowhere to go
    if checkpoint is not None:
        if not checkpoint.removeprefix("file://").strip():
            raise click.BadParameter("an empty path names no directory; give the checkpoint "
                                     "directory", param_hint="--checkpoint")
        if _local_path(checkpoint) is None:
            raise click.BadParameter(f"{checkpoint} is a URL; a checkpoint is a local "
                                     "directory", param_hint="--checkpoint")
        checkpoint = str(local_path(checkpoint))  # a file:// URL as its path
    common = {"epochs": epochs, "C": C, "lam": lam, "seed": seed}
    task = None
    chosen = model_name
    name = None if chosen is None else chosen.name
    if chosen is not None:
        entry = MODELS[chosen.name]
        task = chosen.task or (entry.tasks[0] if len(entry.tasks) == 1 else None)
    if task is not None:  # an unknown model or parameter fails before the data is read
        model_params(model_class(name, task), common, params)
        _check_search(model_class(name, task), search)
    hashing = {} if hash_features is None else {"hash_features": hash_features}
    dataset = _open(data, target, features, exclude, fmt, chunk_rows, nan_policy,
                    weight=weight, task=task if target is not None else None, **hashing)
    if dataset.task is None:
        raise click.UsageError("train needs the target column: --target COL")
    if target is None and task is not None and dataset.task != task:
        # the store's own target (svmlight's labels, zarr's y), read as the model reads it
        dataset = _open(data, dataset.target, features, exclude, fmt, chunk_rows,
                        nan_policy, weight=weight, task=task, **hashing)
    if name is None:
        defaults = DEFAULT_SPARSE_MODELS if dataset.is_sparse else DEFAULT_MODELS
        name = defaults[dataset.task]
        if not quiet:
            rows = " on sparse rows" if dataset.is_sparse else ""
            click.echo(f"model: {name} (the default for a {dataset.task} target{rows}; "
                       "--model chooses another)")
    cls = model_class(name, dataset.task)
    kwargs = model_params(cls, common, params)
    _check_search(cls, search)
    both = [n for n, _ in search if n in kwargs]
    if both:
        raise click.UsageError(f"--search and a fixed value both set {', '.join(both)}: "
                               "give each parameter one way")
    valid = constructor_params(cls)
    if hash_features is not None and "embedding" in valid and "embedding" not in kwargs:
        # a hashed column mixes features, with signed values: curves over it mean nothing,
        # and the zero-preserving curves that sparse rows take need values >= 0
        kwargs["embedding"] = "linear"
        if not quiet:
            click.echo("embedding: linear (hashed features; -p embedding=... chooses another)")
    if chunk_rows is not None and "chunk_rows" in valid:
        kwargs["chunk_rows"] = chunk_rows
    if "progress" in valid and "progress" not in kwargs:
        kwargs["progress"] = _progress(quiet)
    elif "engine" in valid and workers is None and scheduler is None:
        kwargs["engine"] = _engine(quiet, chunk_rows)
    model = _build(cls, kwargs)
    fit_options: dict[str, Any] = {}
    if checkpoint is not None:
        if "checkpoint" not in inspect.signature(model.fit).parameters:
            raise click.UsageError(f"--checkpoint: a {cls.__name__} cannot resume a fit")
        fit_options = {"checkpoint": checkpoint, "checkpoint_every": checkpoint_every}

    # without --nan-policy, a missing value found while training trains again reading NaN
    # as missing values (as fit's nan_policy="auto" does); a resumed fit reads as its first
    retry = checkpoint is None and not _option_given("nan_policy") and not dataset.is_sparse
    with cluster_engine(workers, scheduler, quiet=quiet, chunk_rows=chunk_rows) as cluster:
        started = time.perf_counter()
        searcher = None
        try:
            with recording() as passes:
                try:
                    searcher, model = _fit_model(model, dataset, search, seed, cluster.engine,
                                                 chunk_rows, fit_options)
                except MissingValueError as exc:
                    if not retry:
                        raise
                    found = str(exc).split("; pass ", 1)[0]
                    click.echo(f"missing  : {found}; training again, reading NaN as missing "
                               "values (--nan-policy impute skips the first try, --nan-policy "
                               "raise refuses them)", err=True)
                    dataset = _open(data, dataset.target, features, exclude, fmt, chunk_rows,
                                    "impute", weight=weight, task=dataset.task, **hashing)
                    searcher, model = _fit_model(_build(cls, kwargs), dataset, search, seed,
                                                 cluster.engine, chunk_rows, fit_options)
        except StreamlearnError:
            raise
        except (ValueError, TypeError) as exc:
            raise click.ClickException(f"{type(exc).__name__}: {exc}") from exc
        elapsed = time.perf_counter() - started
        path = _save_trained(model, out)
        if searcher is not None:
            click.echo(_search_report(searcher, dataset.n_rows))
            kwargs.update(searcher.best_params_)

        shown = ", ".join(f"{k}={v!r}" for k, v in kwargs.items()
                          if k not in ("progress", "engine"))
        click.echo(f"trained {cls.__name__}({shown})")
        click.echo(f"  data     : {dataset.n_rows:,} rows x {dataset.n_features} features of "
                   f"{dataset.source.description}")
        if cluster.description:
            click.echo(f"  engine   : {cluster.description}")
        _train_report(model, dataset, elapsed, train_score, quiet, cluster.engine, passes,
                      searcher)
    click.echo(f"\nsaved to {path}")


def _fit_model(model: Any, dataset: Any, search: list[tuple[str, list[Any]]],
               seed: int | None, engine: Any, chunk_rows: int | None,
               fit_options: dict[str, Any]) -> tuple[Any, Any]:
    """Train ``model`` on ``dataset`` (by ``StreamSearchCV`` with ``--search``): the search
    (or None) and the trained model."""
    if not search:
        return None, model.fit(dataset, engine=engine, **fit_options)
    searcher = _search(model, search, seed, engine, chunk_rows)
    searcher.fit(dataset, **fit_options)
    return searcher, searcher.best_estimator_


def _local_path(location: str) -> Path | None:
    """The resolved local path of a path or ``file://`` URL; None for other URLs."""
    if "://" in location and not location.startswith("file://"):
        return None
    return local_path(location).resolve()


def _check_writable(out: str) -> None:
    """Refuse, before any work, a local ``--out`` file that cannot be written: a directory,
    a block device or a socket, a FIFO or a character device that may not be written to, or
    a path whose directory does not exist or may not be written to."""
    if _local_path(out) is None:
        return
    if local_path(out).is_dir():
        raise click.BadParameter(f"{out} is a directory; name a file in it",
                                 param_hint="--out")
    try:
        target = output_target(local_path(out))
    except OSError as exc:
        raise click.BadParameter(str(exc), param_hint="--out") from exc
    if target.through:  # written in place
        if not os.access(target.path, os.W_OK):
            raise click.BadParameter(f"{out} may not be written to", param_hint="--out")
        return
    parent = target.path.parent
    if not parent.exists():
        raise click.BadParameter(f"directory {parent} does not exist; create it first",
                                 param_hint="--out")
    if not parent.is_dir():
        raise click.BadParameter(f"{parent} is not a directory", param_hint="--out")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise click.BadParameter(f"{parent} may not be written to", param_hint="--out")


def _save_trained(model: Any, out: str) -> Any:
    """Save a trained model to ``out``; when that fails, to a new temporary directory
    instead (a model that took a fit to make is not thrown away), naming both."""
    try:
        return model.save(out)
    except (OSError, ModelFileError) as exc:
        if isinstance(exc, ModelFileError) and not isinstance(exc.__cause__, OSError):
            raise  # the model itself cannot be written (anywhere)
        spare = Path(tempfile.mkdtemp(prefix="streamlearn-")) / (Path(out).name or "model.slm")
        model.save(spare)
        raise click.ClickException(f"could not write the model to {out} ({exc}); it was "
                                   f"saved to {spare} instead") from exc


def _refuse_overwriting_inputs(out: str, **inputs: str | None) -> None:
    """Refuse an ``--out`` that is one of the command's inputs, or lies inside an input
    directory (it would join the data the next time the directory is read): writing it
    would replace or change what the command reads.

    Parameters
    ----------
    out : str
        The ``--out`` path or URL.
    **inputs : str or None
        The inputs by the name the message gives them (``DATA``, ``MODEL``, ...).
    """
    target = _local_path(out)
    if target is None:
        return
    for name, location in inputs.items():
        source = None if location is None else _local_path(location)
        if source is not None and (target == source or source in target.parents):
            raise click.UsageError(f"--out {out} would overwrite {name} ({location}): "
                                   "write the output elsewhere")


def _refuse_process_memory(out: str, option: str = "--out") -> None:
    """Refuse an output on fsspec's in-memory filesystem (``memory://``, alone or in a
    chained URL): it lives in the command's own process and ends with it, so a file written
    there would be reported written and be gone the moment the command returns. (The Python
    API writes there, where the process goes on to read it.)"""
    if any(part.split("://", 1)[0] == "memory" for part in out.split("::") if "://" in part):
        raise click.BadParameter(
            f"{out} is in fsspec's in-memory filesystem, which ends with this command's "
            "process: it would be lost on exit; write it to a path or a lasting URL",
            param_hint=option)


def _check_search(cls: type, search: Sequence[tuple[str, list[Any]]]) -> None:
    """Refuse a ``--search`` the model cannot run, before the data is read: a model
    without ``partial_fit``, an unknown parameter name or one given twice, a value the
    parameter does not take."""
    if not search:
        return
    if not hasattr(cls, "partial_fit"):
        tunable = ", ".join(name for name, entry in MODELS.items()
                            if any(hasattr(model_class(name, task), "partial_fit")
                                   for task in entry.tasks))
        raise click.UsageError(f"--search trains the settings as lanes of partial_fit, which "
                               f"{cls.__name__} has not; models with it: {tunable}")
    valid = [p for p in constructor_params(cls) if p not in MANAGED_PARAMS]
    seen: set[str] = set()
    for name, _ in search:
        if name not in valid:
            raise click.BadParameter(f"{cls.__name__} has no parameter {name!r}; valid "
                                     f"names: {', '.join(valid)}", param_hint="'--search'")
        if name in seen:
            raise click.BadParameter(f"{name!r} is searched twice: list its values once",
                                     param_hint="'--search'")
        seen.add(name)
    for name, values in search:
        for value in values:
            try:
                _build(cls, {name: value})
            except click.UsageError as exc:
                raise click.BadParameter(f"{name}={value!r}: {exc.message}",
                                         param_hint="'--search'") from exc


def _search(model: Any, search: Sequence[tuple[str, list[Any]]], seed: int | None,
            engine: Any, chunk_rows: int | None) -> Any:
    """The :class:`~streamlearn.models.StreamSearchCV` of ``train --search``."""
    from streamlearn.models import StreamSearchCV

    return StreamSearchCV(model, dict(search), random_state=0 if seed is None else seed,
                          engine=engine, chunk_rows=chunk_rows)


def _search_report(searcher: Any, n_rows: int) -> str:
    """Every setting's held-out score and the rung it reached, best first."""
    results = searcher.cv_results_
    order = np.argsort(results["rank_test_score"], kind="stable")
    lines = [f"searched {len(order)} settings inside the stream "
             f"({searcher.n_validation_:,} held-out rows; search "
             f"{searcher.search_passes_:.1f} passes, refit included {searcher.n_passes_:.1f}):"]
    for i in order:
        setting = ", ".join(f"{k}={v!r}" for k, v in results["params"][i].items())
        lines.append(f"  {results['rank_test_score'][i]:>3d}  held-out score "
                     f"{results['mean_test_score'][i]:.4f}  rung {results['iter'][i]}  "
                     f"{setting}")
    best = ", ".join(f"{k}={v!r}" for k, v in searcher.best_params_.items())
    lines.append(f"best: {best}, trained on all {n_rows:,} rows")
    return "\n".join(lines)


def _train_report(model: Any, dataset: Any, elapsed: float, train_score: bool, quiet: bool,
                  engine: Any, passes: PassLog | None = None, searcher: Any = None) -> None:
    """Lines of ``train`` after the fit: rows used, classes, time, data read, training
    metrics.

    The passes and bytes read are the model's ``n_passes_`` and ``bytes_read_``, or for a
    model without them those counted in ``passes`` while it was fitted; after a search
    (``searcher``), its ``n_passes_`` (the whole search, the refit included) and as many
    bytes as those passes read at the rate counted in ``passes``.
    """
    n_train = getattr(model, "n_train_", None)
    if n_train is not None and n_train != dataset.n_rows:
        click.echo(f"  trained on {n_train:,} rows (the rest held out for calibration)")
    if dataset.task == "classification":
        classes = list(getattr(model, "classes_", []))
        click.echo(f"  classes  : {len(classes)} ({_shown(classes)})")
    click.echo(f"  fit time : {elapsed:.2f} s" + ("" if searcher is None else
                                                    " (the search and the refit)"))
    counted: Any = model
    if searcher is not None:  # the search's own count: its lanes' re-cut slices are no reads
        per_row = passes.bytes_read / passes.rows_read if passes and passes.rows_read else 0.0
        counted = SimpleNamespace(
            n_passes_=searcher.n_passes_,
            bytes_read_=int(searcher.n_passes_ * dataset.n_rows * per_row))
    line = passes_line(counted, dataset.n_rows, passes)
    if line is not None:
        click.echo(f"  passes   : {line}")
    line = missing_line(model)
    if line is not None:
        click.echo(f"  missing  : {line.removeprefix('missing values: ')}")
    line = pairs_line(model)
    if line is not None:
        click.echo(f"  pairs    : {line.removeprefix('feature pairs: ')}")
    line = values_line(model)
    if line is not None:
        click.echo(f"  values   : {line.removeprefix('value terms: ')}")
    line = bases_line(model)
    if line is not None:
        click.echo(f"  bases    : {line.removeprefix('bases per feature: ')}")
    line = multiclass_line(model)
    if line is not None:
        click.echo(f"  scheme   : {line.removeprefix('multiclass: ')}")
    own = getattr(model, "summary", None)
    if callable(own):
        click.echo(str(own()))
    if train_score:
        from streamlearn.engine.evaluate import evaluate

        metrics = evaluate(model, dataset, engine=engine or _engine(quiet))
        click.echo("\non the training data:")
        click.echo(_indent(metrics_table(metrics, getattr(model, "classes_", None))))


def passes_line(model: Any, n_rows: int, passes: PassLog | None = None) -> str | None:
    """``"read the data 7.0 times, 1.2 GiB"``: what fitting ``model`` read.

    Parameters
    ----------
    model : estimator
        Fitted; its ``n_passes_`` and ``bytes_read_`` are used when it has them.
    n_rows : int
        Rows of the training data.
    passes : PassLog, optional
        Passes counted during the fit, for a model that does not record them.

    Returns
    -------
    str or None
        None when neither the model nor ``passes`` says.
    """
    n_passes = getattr(model, "n_passes_", None)
    n_bytes = getattr(model, "bytes_read_", None)
    if (n_passes is None or n_bytes is None) and passes is not None:
        n_passes, n_bytes = passes.passes_over(n_rows), passes.bytes_read
    if n_passes is None or n_bytes is None:
        return None
    times = "time" if f"{float(n_passes):.1f}" == "1.0" else "times"
    return f"read the data {float(n_passes):.1f} {times}, {human_bytes(n_bytes)}"


def _build(cls: type, kwargs: dict[str, Any]) -> Any:
    """Construct the estimator and check its parameters where it can say (usage errors)."""
    try:
        model = cls(**kwargs)
        for name in ("_validate_params", "_check_params", "_validate"):
            check = getattr(model, name, None)
            if callable(check):
                check()
    except StreamlearnError:
        raise
    except (ValueError, TypeError) as exc:
        raise click.UsageError(f"invalid model parameters for {cls.__name__}: {exc}") from exc
    return model


def _indent(text: str, prefix: str = "  ") -> str:
    return "\n".join(prefix + line if line else line for line in text.splitlines())


# -- predict ------------------------------------------------------------------------------
class PassthroughColumns:
    """Columns of the data copied next to the predictions, read piece by piece.

    Holds at most one storage piece of these columns at a time; reads through its own
    source so it never shares file handles with the chunk stream's reader thread.

    Parameters
    ----------
    source : Source
        A fresh source of the same data.
    names : list of str
    """

    def __init__(self, source: Any, names: list[str]) -> None:
        missing = [n for n in names if n not in source.kinds]
        if missing:
            raise SchemaError(f"--keep names column(s) {missing} not in {source.description}; "
                              f"columns are {_shown(list(source.columns), 20)}")
        self.source = source
        self.names = names
        self._offsets = np.cumsum([0, *(p.n_rows for p in source.pieces)])
        self._cached: tuple[int, dict[str, np.ndarray]] | None = None

    def _piece(self, i: int) -> dict[str, np.ndarray]:
        if self._cached is None or self._cached[0] != i:
            # a source that can copies the column as it is, its missing values included
            read = getattr(self.source, "read_passthrough", self.source.read_target)
            try:
                values = {n: np.asarray(read(i, n)) for n in self.names}
            except KeyError as exc:
                raise SchemaError(f"column {exc} of {self.source.description} cannot be copied "
                                  "to the predictions (it is not a column of its own)") from None
            self._cached = (i, values)
        return self._cached[1]

    def take(self, rows: np.ndarray) -> dict[str, np.ndarray]:
        """Values of the columns at global rows ``rows`` (ascending)."""
        lo, hi = int(rows[0]), int(rows[-1]) + 1
        i = int(np.searchsorted(self._offsets, lo, side="right")) - 1
        parts: dict[str, list[np.ndarray]] = {n: [] for n in self.names}
        while i < len(self._offsets) - 1 and self._offsets[i] < hi:
            a, b = int(self._offsets[i]), int(self._offsets[i + 1])
            values = self._piece(i)
            for n in self.names:
                parts[n].append(values[n][max(lo, a) - a : min(hi, b) - a])
            i += 1
        return {n: np.concatenate(p)[rows - lo] for n, p in parts.items()}


def _kept_columns_source(model: Any, data: str, dataset: Any, fmt: str | None) -> Any:
    """A source of DATA of its own, which ``--keep`` copies columns from by name.

    ``dataset`` is DATA opened as ``model`` reads it, and DATA is opened again the same way
    (svmlight indices on the training file's base, rows hashed as the training rows were).
    Sparse rows of parquet (hashed columns) are read through a source whose columns are
    only the target and the weight, so there the kept columns are read from the same files
    as plain parquet columns: the same files in the same order, one piece per row group,
    so row for row the same.
    """
    from streamlearn.data.open import open_dataset, reading_for
    from streamlearn.data.sources.parquet import ParquetSource
    from streamlearn.data.sources.parquet_sparse import ParquetSparseSource

    if isinstance(dataset.source, ParquetSparseSource):
        return ParquetSource(dataset.source.description)
    options = {"features": list(dataset.feature_names), **reading_for(model, data, fmt)}
    return open_dataset(data, format=fmt, **options).source


def _prediction_columns(model: Any, X: np.ndarray, proba: bool) -> dict[str, np.ndarray]:
    with library_rows():  # a chunk of the model's columns, in its order
        columns = {"prediction": np.asarray(model.predict(X))}
        p = np.asarray(model.predict_proba(X), dtype=np.float64) if proba else None
    if p is not None:
        for j, label in enumerate(model.classes_):  # svmlight's float labels: proba_1
            columns[f"proba_{number_text(label)}"] = p[:, j]
    return columns


PREDICTION_SUFFIXES = {".parquet": ("parquet", None), ".pq": ("parquet", None),
                       ".csv": ("csv", None), ".csv.gz": ("csv", "gzip"),
                       ".csv.bz2": ("csv", "bz2"), ".tsv": ("tsv", None),
                       ".tsv.gz": ("tsv", "gzip"), ".tsv.bz2": ("tsv", "bz2")}


def prediction_format(out: str | os.PathLike[str]) -> tuple[str, str | None]:
    """The table format and compression of a predictions file, from its name.

    Returns
    -------
    (format, compression) : ("parquet" | "csv" | "tsv", "gzip" | "bz2" | None)

    Raises
    ------
    ValueError
        When the name ends in none of :data:`PREDICTION_SUFFIXES`.
    """
    name = Path(out).name.lower()
    for suffix in sorted(PREDICTION_SUFFIXES, key=len, reverse=True):
        if name.endswith(suffix):
            return PREDICTION_SUFFIXES[suffix]
    raise ValueError(f"cannot tell which format to write {os.fspath(out)!r} in: name it "
                     f"{', '.join(PREDICTION_SUFFIXES)}")


class _TableFile:
    """A streamed table file, parquet or delimited text, written one chunk at a time."""

    def __init__(self, path: Path, fmt: str, compression: str | None) -> None:
        self.path, self.fmt, self.compression = path, fmt, compression
        self._stream: Any = None
        self._writer: Any = None

    def write(self, table: Any) -> None:
        import pyarrow as pa
        import pyarrow.csv as pacsv
        import pyarrow.parquet as pq

        if self._writer is None:
            if self.path.is_file():  # the temporary file
                self._stream = pa.OSFile(str(self.path), "wb")
            else:  # a FIFO or a device written through: arrow's own files seek, pipes cannot
                self._stream = pa.PythonFile(open(self.path, "wb"), mode="w")
            if self.fmt == "parquet":
                self._writer = pq.ParquetWriter(self._stream, table.schema)
            else:
                if self.compression is not None:
                    self._stream = pa.CompressedOutputStream(self._stream, self.compression)
                options = pacsv.WriteOptions(delimiter="\t" if self.fmt == "tsv" else ",")
                self._writer = pacsv.CSVWriter(self._stream, table.schema,
                                               write_options=options)
        self._writer.write_table(table)

    @property
    def started(self) -> bool:
        return self._writer is not None

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        if self._stream is not None:
            self._stream.close()
            self._stream = None


def write_predictions(model: Any, dataset: Any, out: str | os.PathLike[str], *,
                      proba: bool = False, keep: PassthroughColumns | None = None,
                      row_index: bool = False, quiet: bool = True) -> tuple[int, list[str]]:
    """Stream ``dataset`` through ``model`` into a table file, one piece per chunk.

    The format follows the name of ``out`` (:func:`prediction_format`): parquet (one row
    group per chunk), or CSV / TSV with a header line, plain or compressed. The file is
    written under a temporary name beside the destination (the file a symbolic link names)
    and renamed when complete, so ``out`` is never a partial file; a FIFO or a character
    device (``/dev/stdout``) is written through instead (:class:`AtomicOutput`).

    Returns
    -------
    (rows written, column names)
    """
    import pyarrow as pa

    from streamlearn.engine.progress import Progress, progress_enabled

    fmt, compression = prediction_format(out)
    destination = out
    remote = remote_location(out)
    output: AtomicOutput | None = None
    with _writing("the predictions", destination):
        if remote is None:
            output = AtomicOutput(local_path(out))
            tmp = output.path
        else:  # written here in full, then uploaded in one piece
            fd, tmp_name = tempfile.mkstemp(prefix=".predictions.", suffix=".tmp")
            os.close(fd)
            tmp = Path(tmp_name)
    writer = _TableFile(tmp, fmt, compression)
    n_written = 0
    names: list[str] = []
    unseen = UnseenCategories(model, dataset)
    try:
        with Progress(dataset.n_rows, "predict", progress_enabled(_progress(quiet))) as bar:
            for chunk in dataset.chunks():
                bar.update(chunk.n_rows)
                if chunk.n_rows == 0:
                    continue
                unseen.add(chunk)
                columns: dict[str, np.ndarray] = {}
                if keep is not None:
                    columns.update(keep.take(chunk.rows))
                if row_index:
                    columns["row"] = chunk.rows
                columns.update(_prediction_columns(model, chunk.X, proba))
                table = pa.table(columns)
                names = table.column_names
                with _writing("the predictions", destination):
                    writer.write(table)
                n_written += chunk.n_rows
        if not writer.started:
            raise DataError("no rows left to predict (every row was dropped by --nan-policy)")
        with _writing("the predictions", destination):
            writer.close()
            if output is not None:
                output.commit()
            else:
                upload(tmp, destination)
    finally:
        writer.close()
        if output is not None:
            output.discard()
        else:
            tmp.unlink(missing_ok=True)
    unseen.warn()
    return n_written, names


class UnseenCategories:
    """Counts, chunk by chunk, the rows whose categorical features hold a category the
    model did not see in fit (coded one past its categories), and warns of them."""

    def __init__(self, model: Any, dataset: Any) -> None:
        self.model = model
        categories = getattr(model, "categories_", None) or {}
        names = [] if dataset.is_sparse else list(dataset.feature_names)
        self.columns = [(names.index(f), f, len(c)) for f, c in categories.items()
                        if f in names]
        self.counts = {f: 0 for _, f, _ in self.columns}
        self.first: dict[str, int] = {}

    def add(self, chunk: Any) -> None:
        """Tally one chunk."""
        for j, name, k in self.columns:
            hits = np.flatnonzero(np.asarray(chunk.X[:, j]) == k)
            if hits.size:
                self.counts[name] += int(hits.size)
                self.first.setdefault(name, int(chunk.rows[hits[0]]))

    def warn(self) -> None:
        """One ``UserWarning`` per feature that held unseen categories."""
        from streamlearn.models.base import unseen_code_reading

        reading = getattr(self.model, "_unseen_category_reading", None)
        for _, name, k in self.columns:
            n = self.counts[name]
            if n:
                said = (reading(name, k) if reading is not None
                        else unseen_code_reading(name, k))
                warnings.warn(f"feature {name!r} holds {n:,} value(s) not seen in fit "
                              f"(first at row {self.first[name]}); {said}", UserWarning,
                              stacklevel=2)


@cli.command()
@click.argument("model_path", metavar="MODEL")
@click.argument("data")
@click.option("--out", "-o", required=True, type=click.Path(dir_okay=False),
              help="File to write the predictions to: .parquet, .csv or .tsv (the name's "
                   "suffix picks the format; .gz or .bz2 after .csv or .tsv compresses it).")
@click.option("--proba", is_flag=True,
              help="Add one probability column per class (proba_<label>).")
@click.option("--keep", "-k", multiple=True, metavar="COL",
              help="Copy this column of DATA next to the predictions (repeatable), e.g. an id.")
@click.option("--row-index", is_flag=True,
              help="Add each row's position in DATA as column 'row'.")
@_storage_options
@_quiet_option
@_user_errors
def predict(model_path: str, data: str, out: str, proba: bool, keep: tuple[str, ...],
            row_index: bool, fmt: str | None, chunk_rows: int | None, nan_policy: str,
            quiet: bool) -> None:
    """Predict DATA with the model in MODEL, streaming rows into a parquet or CSV file.

    DATA must hold the feature columns the model was trained on (other columns are
    ignored). Predictions are written chunk by chunk, in the order of DATA, as a column
    'prediction'; the file appears under its name only once complete.

    \b
    Examples:
      streamlearn predict model.slm test.parquet --out predictions.parquet
      streamlearn predict model.slm test.parquet -o p.parquet --proba --keep id
      streamlearn predict model.slm s3://bucket/new.zarr -o p.parquet --row-index
    """
    _refuse_process_memory(out)
    _refuse_overwriting_inputs(out, MODEL=model_path, DATA=data)
    _check_writable(out)
    try:
        prediction_format(out)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--out") from None
    model = _load_model(model_path)
    if proba and not (hasattr(model, "predict_proba") and _is_classifier(model)):
        raise click.UsageError(f"--proba: a {type(model).__name__} has no class probabilities")
    clash = [c for c in (*keep, *(["row"] if row_index else [])) if c == "prediction"
             or c.startswith("proba_")]
    if clash or (row_index and "row" in keep):
        raise click.UsageError(f"--keep column(s) {clash or ['row']} would clash with the "
                               "output's own columns")
    dataset = _open_for_model(model, data, target=None, fmt=fmt, chunk_rows=chunk_rows,
                              nan_policy=nan_policy)
    passthrough = None
    if keep:
        passthrough = PassthroughColumns(_kept_columns_source(model, data, dataset, fmt),
                                         list(dict.fromkeys(keep)))
    started = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        n_rows, names = write_predictions(model, dataset, out, proba=proba, keep=passthrough,
                                          row_index=row_index, quiet=quiet)
    elapsed = time.perf_counter() - started
    for message in dict.fromkeys(str(w.message) for w in caught):
        click.echo(f"warning: {message}", err=True)
    click.echo(f"wrote {n_rows:,} predictions to {out} (columns: {', '.join(names)})")
    if n_rows < dataset.n_rows and not row_index and not keep:
        click.echo(f"warning: {dataset.n_rows - n_rows:,} of the {dataset.n_rows:,} rows were "
                   "dropped (--nan-policy drop), so the predictions no longer line up with "
                   "DATA's rows; add --row-index or --keep ID to say which row each is",
                   err=True)
    if not quiet:
        click.echo(f"{n_rows:,} rows in {elapsed:.2f} s ({_rate(n_rows, elapsed)})", err=True)


# -- evaluate -----------------------------------------------------------------------------
@cli.command("evaluate")
@click.argument("model_path", metavar="MODEL")
@click.argument("data")
@_target_option
@_storage_options
@click.option("--json", "as_json", is_flag=True, help="Print the metrics as one JSON object.")
@_quiet_option
@_user_errors
def evaluate_command(model_path: str, data: str, target: str | None, fmt: str | None,
                     chunk_rows: int | None, nan_policy: str, as_json: bool,
                     quiet: bool) -> None:
    """Score the model in MODEL on DATA in one streamed pass.

    Classifiers: accuracy, log-loss (with probabilities) and the confusion matrix;
    regressors: MSE, MAE and R^2. DATA needs the model's feature columns and the target.

    \b
    Examples:
      streamlearn evaluate model.slm test.parquet --target label
      streamlearn evaluate model.slm test.zarr --json > metrics.json
    """
    from streamlearn.engine.evaluate import evaluate

    model = _load_model(model_path)
    dataset = _open_for_model(model, data, target=target, fmt=fmt, chunk_rows=chunk_rows,
                              nan_policy=nan_policy)
    if dataset.task is None:
        raise click.UsageError("evaluate needs the target column: --target COL")
    started = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        metrics = evaluate(model, dataset, engine=_engine(quiet))
    elapsed = time.perf_counter() - started
    for message in dict.fromkeys(str(w.message) for w in caught):
        click.echo(f"warning: {message}", err=True)
    # the matrix's labels: the model's classes and the data's (which may lack some)
    classes = metrics.get("classes")
    if as_json:
        report = {"model": type(model).__name__, "data": data, "target": dataset.target,
                  "task": dataset.task, **metrics}
        click.echo(json.dumps(_json_ready(report), indent=1))
    else:
        click.echo(f"{type(model).__name__} on {dataset.source.description}, target "
                   f"{dataset.target!r}\n")
        click.echo(metrics_table(metrics, classes))
    if not quiet:
        click.echo(f"{dataset.n_rows:,} rows in {elapsed:.2f} s ({_rate(dataset.n_rows, elapsed)})",
                   err=True)


# -- explain ------------------------------------------------------------------------------
#: Rows of DATA that ``explain`` draws (evenly spaced over the data).
EXPLAIN_ROWS = 5000


def row_sample(dataset: Any, n: int = EXPLAIN_ROWS) -> np.ndarray:
    """About ``n`` rows of ``dataset`` evenly spaced over it, read in one streamed pass."""
    if dataset.is_sparse:
        raise click.ClickException("explain draws its pictures over dense rows; the data "
                                   f"{dataset.source.description} holds sparse rows")
    step = max(1, dataset.n_rows // n)
    parts = []
    for chunk in dataset.chunks(prefetch=0):
        first = (-int(chunk.start)) % step
        # a copy: a strided view would keep the whole chunk alive until the concatenation,
        # and the pass would hold every row it read
        parts.append(np.array(chunk.X[first::step]))
    return np.concatenate(parts) if parts else np.zeros((0, dataset.n_features))


@cli.command("explain")
@click.argument("model_path", metavar="MODEL")
@click.argument("data", required=False)
@click.option("--out", "-o", "out", required=True, type=click.Path(file_okay=False),
              help="Directory for the PNGs and index.html (created if missing).")
@_storage_options
@_quiet_option
@_user_errors
def explain_command(model_path: str, data: str | None, out: str, fmt: str | None,
                    chunk_rows: int | None, nan_policy: str, quiet: bool) -> None:
    """Draw what the model in MODEL learned: PNGs and an index.html in --out.

    Additive models: each feature's curve (with the density of DATA under it), the pair
    surfaces, the importances; mixtures: component sizes and, for two features, the
    regions; ShareBoost: the error path and the chosen features; super-sparse machines:
    the prototypes. DATA, optional, is sampled (about 5,000 rows) for the densities.
    Needs matplotlib (pip install 'streamlearn[plot]').

    \b
    Examples:
      streamlearn explain model.slm --out model_report
      streamlearn explain model.slm train.parquet -o model_report
    """
    from streamlearn import plot

    _refuse_process_memory(out)
    # pictures in a parquet directory would be read as its files, and break it
    _refuse_overwriting_inputs(out, MODEL=model_path, DATA=data)
    model = _load_model(model_path)
    sample = None
    if data is not None:
        dataset = _open_for_model(model, data, target=None, fmt=fmt, chunk_rows=chunk_rows,
                                  nan_policy=nan_policy)
        sample = row_sample(dataset)
    index = plot.explain(model, out, sample)
    pictures = sorted(p.name for p in index.parent.glob("*.png")
                      if p.stem in plot.PICTURE_STEMS)
    click.echo(f"wrote {index} ({', '.join(pictures) or 'no pictures'})")


# -- convert ------------------------------------------------------------------------------
@cli.command("convert")
@click.argument("data")
@data_options
@click.option("--weight", "-w", help="Sample-weight column (written as the array 'weight').")
@click.option("--out", "-o", required=True,
              help="Zarr store to write: a path or an fsspec URL.")
@click.option("--layout", type=click.Choice(["auto", "dense", "sparse"]), default="auto",
              show_default=True,
              help="dense: an X matrix; sparse: CSR arrays; auto: sparse for sparse data "
                   "(svmlight, CSR stores), else dense.")
@click.option("--compression", type=click.Choice(["auto", "lz4", "zstd", "none"]),
              default="auto", show_default=True,
              help="auto: each numeric array with lz4 where that saves at least a quarter "
                   "of the bytes of its first storage chunk, else uncompressed (decoding "
                   "is paid on every epoch, the bytes saved only on reads from disk); lz4: "
                   "every array, decoded fastest of the compressors; zstd: every array, "
                   "the smallest store; none. Text labels are always zstd.")
@click.option("--overwrite", is_flag=True, help="Replace --out if it exists.")
@_hash_option("The store holds the N hashed columns (train on it without hashing).")
@_quiet_option
@_user_errors
def convert_command(data: str, target: str | None, features: list[str] | None,
                    exclude: list[str] | None,
                    fmt: str | None, chunk_rows: int | None, nan_policy: str,
                    weight: str | None, out: str, layout: str, compression: str,
                    overwrite: bool, hash_features: int | None, quiet: bool) -> None:
    """Write DATA to a zarr store, streaming it chunk by chunk.

    The store holds the features (an X matrix, or CSR arrays with --layout sparse), the
    target as its original labels or values (array y, the default target when the store
    is opened) and the sample weights (array weight: open it with --weight weight).
    --chunk-rows sets the rows per storage chunk. A local store appears under its name
    only once complete.

    \b
    Examples:
      streamlearn convert train.parquet -t label -o train.zarr
      streamlearn convert train.svm -o train.zarr --layout sparse
      streamlearn convert data/ -t price --exclude id -o s3://bucket/houses.zarr
    """
    from streamlearn.data.convert import convert
    from streamlearn.engine.progress import Progress, progress_enabled

    _refuse_process_memory(out)
    _refuse_overwriting_inputs(out, DATA=data)
    hashing = {} if hash_features is None else {"hash_features": hash_features}
    dataset = _open(data, target, features, exclude, fmt, chunk_rows, nan_policy,
                    weight=weight, **hashing)
    with Progress(dataset.n_rows, "convert", progress_enabled(_progress(quiet))) as bar:
        try:
            report = convert(dataset, out, layout=layout,  # type: ignore[arg-type]
                             chunk_rows=chunk_rows, overwrite=overwrite,
                             compression=compression,  # type: ignore[arg-type]
                             progress=bar.update)
        except (FileExistsError, ValueError) as exc:
            raise click.ClickException(str(exc)) from exc
        except StreamlearnError:
            raise
        except OSError as exc:  # a full disk, a directory that refuses files
            raise click.ClickException(f"could not write the store to {out}: {exc}") from exc
    columns = f"{report.features:,} features"
    if dataset.target is not None:
        columns += f" + target {dataset.target!r}"
    click.echo(f"wrote {out}: {report.rows:,} rows x {columns}, {report.layout} layout, "
               f"{report.nnz:,} non-zeros, {human_bytes(report.bytes_written)} "
               f"({codecs_text(report.codecs)}), "
               f"{report.seconds:.2f} s ({_rate(report.rows, report.seconds)})")


def codecs_text(codecs: dict[str, str]) -> str:
    """The arrays of a store by compressor, e.g. ``"lz4: indptr, indices, y; none: data"``."""
    by_codec: dict[str, list[str]] = {}
    for name, codec in codecs.items():
        by_codec.setdefault(codec, []).append(name)
    return "; ".join(f"{codec}: {', '.join(names)}" for codec, names in by_codec.items())


# -- demo ---------------------------------------------------------------------------------
#: Hyper-parameters of the demo's additive model: cubic B-splines, two PEGASOS epochs.
DEMO_MODEL = {"embedding": "bspline", "degree": 3}
#: Points at which each learned curve is drawn.
CURVE_POINTS = 24
SPARK = "▁▂▃▄▅▆▇█"


def pairs_line(model: Any) -> str | None:
    """What ``interactions="auto"`` did: the pairs tried and whether they were kept."""
    check = getattr(model, "interaction_check_", None)
    if not check:
        return None
    if "screened" not in check:
        return f"feature pairs: none tried ({check['reason']})"
    bases = getattr(model, "pair_bases_", None)
    linear = getattr(model, "linear_check_", None)
    if check["kept"] and linear and linear["kept"]:  # then the linear model replaced them
        verdict = "kept, then dropped with the curves for the linear model"
    else:
        verdict = (f"kept on {bases} x {bases} grids" if check["kept"] and bases
                   else "kept" if check["kept"] else "not kept")
    shown = ", ".join(" x ".join(p) for p in model.interactions_[:3])
    return (f"feature pairs: {len(check['screened'])} screened and trained, {verdict} "
            f"(held-out log-loss {check['held_out_log_loss_without']:.4f} without, "
            f"{check['held_out_log_loss_with']:.4f} with)" + (f"; best: {shown}" if shown
                                                              else ""))


def missing_line(model: Any) -> str | None:
    """How a model fitted with ``nan_policy="impute"`` reads missing values, if it does."""
    missing = getattr(model, "missing_values_", None)
    if missing is None:
        return None
    predicted = set() if missing.regression is None else \
        {int(j) for j in missing.regression.targets}
    shown = ", ".join(f"{missing.source_names[j]} ("
                      + ("predicted" if j in predicted else "median") + ")"
                      for j in missing.columns[:4])
    more = len(missing.columns) - 4
    k = len(missing.columns)
    empty = missing.empty
    parts = [] if not k and empty else [
        f"{k} of {missing.n_columns} columns {'has' if k == 1 else 'have'} gaps, each read "
        "with an indicator column" + (f": {shown}" if shown else "")
        + (f" and {more} more" if more > 0 else "")]
    if empty:
        blank = ", ".join(missing.source_names[j] for j in empty[:4]) \
            + (f" and {len(empty) - 4} more" if len(empty) > 4 else "")
        parts.append(f"{len(empty)} of {missing.n_columns} "
                     f"{'is' if len(empty) == 1 else 'are'} missing in every row, read as 0 "
                     f"(carrying nothing): {blank}")
    return "missing values: " + "; ".join(parts)


def values_line(model: Any) -> str | None:
    """What ``value_terms="auto"`` did: the features given a weight per value, if any."""
    check = getattr(model, "value_check_", None)
    if not check:
        return None
    if "screened" not in check:
        return (f"value terms: none ({len(check['candidates'])} candidate features; "
                f"{check['reason']})")
    verdict = "kept" if check["kept"] else "not kept"
    shown = ", ".join(f"{name} ({len(values)} values)"
                      for name, values in getattr(model, "value_terms_", ())[:3])
    return (f"value terms: {len(check['screened'])} screened and trained, {verdict} "
            f"(held-out log-loss {check['held_out_log_loss_without']:.4f} without, "
            f"{check['held_out_log_loss_with']:.4f} with)" + (f"; {shown}" if shown else ""))


def bases_line(model: Any) -> str | None:
    """What ``n_bases="auto"`` did: each count of bases tried, with its held-out loss."""
    tried = getattr(model, "bases_tried_", None)
    if not tried:
        return None
    steps = ", ".join(f"{n}: {loss:.4f}" if loss is not None else f"{n}: -"
                      for n, loss in tried)
    linear = getattr(model, "linear_check_", None)
    if linear and linear["kept"]:
        return (f"bases per feature: none, the linear model kept (held-out log-loss "
                f"{linear['linear']:.4f} against the curves' {linear['curves']:.4f}; by "
                f"count: {steps})")
    verdict = (f"; the linear model not kept ({linear['linear']:.4f})"
               if linear and linear["linear"] is not None else "")
    return (f"bases per feature: {model.n_bases_} kept (held-out log-loss by count: "
            f"{steps}{verdict})")


#: How the summary lines name the schemes of ``multiclass``.
SCHEMES = {"ovr": "one-vs-rest", "ovo": "one-vs-one"}


def multiclass_line(model: Any) -> str | None:
    """What ``multiclass="auto"`` did: the scheme kept, with each scheme's held-out
    log-loss of ``predict_proba`` (``multiclass_check_``; ``MixtureSVC``'s cross-fitted,
    with the standard error of their difference), or why one-vs-one was not tried. None
    for a model that compared no schemes."""
    check = getattr(model, "multiclass_check_", None)
    if not check:
        return None
    kept = SCHEMES[check["kept"]]
    if check["ovo"] is None:
        return f"multiclass: {kept} kept, one-vs-one not tried ({check['reason']})"
    se = check.get("standard_error")  # MixtureSVC's: cross-fitted, against a margin
    return (f"multiclass: {kept} kept (held-out log-loss {check['ovr']:.4f} one-vs-rest, "
            f"{check['ovo']:.4f} one-vs-one" + (
                "" if se is None else f", standard error of the difference {se:.4f}") + ")")


def sparkline(values: np.ndarray, lo: float, hi: float) -> str:
    """One character per value, eight levels between ``lo`` and ``hi``."""
    span = hi - lo if hi > lo else 1.0
    levels = np.clip(np.rint((values - lo) / span * (len(SPARK) - 1)), 0, len(SPARK) - 1)
    return "".join(SPARK[int(k)] for k in levels)


def additive_curves(model: Any, lo: np.ndarray, hi: np.ndarray,
                    points: int = CURVE_POINTS) -> np.ndarray:
    """Learned curve ``g_f`` of each feature of an additive model, centred to mean zero.

    Each feature's term of the (first) binary model (:meth:`AdditiveSVC.term_contributions`)
    at ``points`` values evenly spaced over ``[lo_f, hi_f]``.

    Returns
    -------
    ndarray of shape (n_features, points)
    """
    grid = np.linspace(lo, hi, points, dtype=np.float32)  # (points, features)
    # the features' terms only (pair terms follow them), each with its pairs' marginals
    with library_rows():
        terms = model.term_contributions(grid)[:, : grid.shape[1], 0].T  # (features, points)
    return terms - terms.mean(axis=1, keepdims=True)


def _true_accuracy(dataset: Any, signal: Callable[[np.ndarray], np.ndarray]) -> float:
    """Accuracy of the sign of the noise-free signal on a dataset (the best achievable)."""
    from streamlearn.engine.local import LocalEngine

    classes = dataset.classes

    def step(state: list[int], chunk: Any) -> list[int]:
        guess = (signal(chunk.X) > 0).astype(classes.dtype)
        return [state[0] + int((guess == classes[chunk.y]).sum()), state[1] + chunk.n_rows]

    correct, total = LocalEngine(progress=False).reduce(
        dataset, start=lambda: [0, 0], step=step,
        merge=lambda a, b: [a[0] + b[0], a[1] + b[1]])
    return correct / max(total, 1)


@cli.command()
@click.option("--rows", type=click.IntRange(min=10_000), default=None,
              help="Training rows of the generated dataset (default 2,000,000).")
@click.option("--epochs", type=click.IntRange(min=1), default=None,
              help="PEGASOS epochs of the additive model, exactly (default: until its "
                   "stopping rule is met).")
@_quiet_option
@_user_errors
def demo(rows: int | None, epochs: int | None, quiet: bool) -> None:
    """Train an additive SVM on the built-in demo dataset and show what it learned.

    The data is a binary problem whose label is the sign of a sum of one non-linear curve
    per feature (a wave, a bowl, a kink, a step, a bump, a line; two features are noise),
    written as parquet under $STREAMLEARN_CACHE (default ~/.cache/streamlearn); nothing is
    downloaded. The demo streams it to train an AdditiveSVC (cubic B-splines, PEGASOS) and
    a linear SVM, scores both on held-out rows, draws the curve learned for each feature
    next to the true one, and saves the model.

    \b
    Examples:
      streamlearn demo
      streamlearn demo --rows 200000 --quiet
    """
    from streamlearn.data.open import open_dataset
    from streamlearn.data.synthetic import (
        DEMO_ROWS,
        additive_signal,
        cache_dir,
        demo_dataset_path,
    )
    from streamlearn.engine.compile_clock import CompileClock
    from streamlearn.engine.describe import describe
    from streamlearn.engine.evaluate import evaluate
    from streamlearn.models import AdditiveSVC

    n_rows = rows or DEMO_ROWS
    n_test = max(n_rows // 10, 10_000)
    click.echo(f"demo: {n_rows:,} training rows and {n_test:,} held-out test rows; label = "
               "sign of a sum of\none non-linear curve per feature (x6, x7 are noise) plus "
               "noise")
    started = time.perf_counter()
    train_path = demo_dataset_path(n_rows, seed=0)
    test_path = demo_dataset_path(n_test, seed=1)
    click.echo(f"  data in {train_path}\n      and {test_path} "
               f"({time.perf_counter() - started:.1f} s)")
    train_set = open_dataset(train_path, target="label")
    test_set = open_dataset(test_path, target="label")
    click.echo("")
    click.echo(train_set.schema)

    fixed = {} if epochs is None else {"epochs": epochs, "tol": None}
    params = {**DEMO_MODEL, **fixed, "random_state": 0, "progress": _progress(quiet)}
    shown = "" if epochs is None else f", epochs={epochs}"
    click.echo(f"\ntraining AdditiveSVC(degree=3{shown}): one cubic B-spline curve per "
               "feature, PEGASOS; then the best feature pairs, kept if they help, and\n"
               "  as many bases per feature as the held-out rows support")
    started = time.perf_counter()
    with CompileClock() as compiling:
        model = AdditiveSVC(**params).fit(train_set)
    fit_s = time.perf_counter() - started
    streamed = round(model.n_passes_ * n_rows)  # rows the fit read (describe, epochs, calibration)
    rule = " (its stopping rule met)" if epochs is None else ""
    click.echo(f"  {model.n_iter_} epochs{rule}; {model.n_passes_:g} passes over {n_rows:,} "
               f"rows in {fit_s:.1f} s ({_rate(streamed, fit_s)})")
    click.echo(f"  first fit: {compiling.seconds:.1f} s of it compiling kernels"
               if compiling.seconds >= 0.05 else
               "  its kernels were compiled by an earlier run (cached)")
    for line in (pairs_line(model), values_line(model), bases_line(model),
                 multiclass_line(model)):
        if line:
            click.echo(f"  {line}")
    click.echo("training a linear SVM on the same stream, for comparison")
    started = time.perf_counter()
    linear = AdditiveSVC(**{**params, "embedding": "linear"}).fit(train_set)
    click.echo(f"  {time.perf_counter() - started:.1f} s")

    engine = _engine(quiet)
    scores = {"additive (B-splines)": evaluate(model, test_set, engine=engine),
              "linear": evaluate(linear, test_set, engine=engine)}
    click.echo(f"\non the {n_test:,} held-out rows:")
    click.echo(f"  {'model':<22} {'accuracy':>8} {'log-loss':>8}")
    for name, m in scores.items():
        click.echo(f"  {name:<22} {m['accuracy']:>8.4f} {m['log_loss']:>8.4f}")
    click.echo(f"  {'true curves (best)':<22} {_true_accuracy(test_set, additive_signal):>8.4f}")

    stats = describe(test_set, engine=engine, probabilities=(0.02, 0.5, 0.98))
    lo, center, hi = stats.quantiles
    learned = additive_curves(model, lo, hi)
    grid = np.linspace(lo, hi, CURVE_POINTS).T  # (features, points)
    truth = np.empty_like(learned)
    for f in range(len(center)):
        X = np.tile(center.astype(np.float32), (CURVE_POINTS, 1))
        X[:, f] = grid[f]
        truth[f] = additive_signal(X) - additive_signal(X).mean()
    click.echo("\nlearned curve of each feature (x from its 2% to its 98% quantile), next to "
               "the true one;\nshare = the curve's range as a share of all curves' ranges")
    click.echo(f"  {'feature':<8} {'share':>6}  {'learned':<{CURVE_POINTS}}  {'share':>6}  true")
    spans = {k: np.ptp(c, axis=1) for k, c in (("learned", learned), ("true", truth))}
    from streamlearn.models.base import feature_names_of

    for f, name in enumerate(feature_names_of(model)):
        parts = []
        for key, curves in (("learned", learned), ("true", truth)):
            share = spans[key][f] / spans[key].sum()
            parts.append((f"{share:>6.0%}", sparkline(curves[f], curves.min(), curves.max())))
        click.echo(f"  {name:<8} {parts[0][0]}  {parts[0][1]}  {parts[1][0]}  {parts[1][1]}")

    path = model.save(cache_dir() / f"demo-additive-{n_rows}.slm")
    click.echo(f"\nmodel saved to {path}")
    click.echo(f"  streamlearn evaluate {path} {test_path} --target label")
    click.echo(f"  streamlearn predict {path} {test_path} --out predictions.parquet --proba")


def show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                 file: Any = None, line: str | None = None) -> None:
    """Print a warning as the commands print their other messages: one line on stderr,
    its kind and text, without the library's source line it was raised from."""
    click.echo(f"warning: {category.__name__}: {message}", err=True)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``streamlearn`` console script."""
    warnings.showwarning = show_warning
    cli.main(args=argv, prog_name="streamlearn")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
