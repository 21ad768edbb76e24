"""The ``streamlearn`` command."""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Callable
from typing import Any

import click

from streamlearn import __version__
from streamlearn.errors import StreamlearnError


def _user_errors(command: Callable[..., Any]) -> Callable[..., Any]:
    """Report streamlearn errors as one line on stderr with exit code 1, no traceback."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except StreamlearnError as exc:
            raise click.ClickException(f"{type(exc).__name__}: {exc}") from exc

    return wrapper


def _names(value: str | None) -> list[str] | None:
    if value is None:
        return None
    return [v.strip() for v in value.split(",") if v.strip()]


def _nan_policy(value: str) -> str | float:
    if value in ("raise", "drop"):
        return value
    try:
        return float(value)
    except ValueError:
        raise click.BadParameter("use 'raise', 'drop' or a number to fill with") from None


def data_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Options shared by every command that opens a dataset."""
    options = [
        click.option("--target", "-t", help="Target column (zarr X/y stores default to y)."),
        click.option("--features", help="Comma-separated feature columns (default: all others)."),
        click.option("--exclude", help="Comma-separated columns to leave out."),
        click.option("--format", "fmt", type=click.Choice(["parquet", "zarr"]),
                     help="Storage format when the path does not tell."),
        click.option("--chunk-rows", type=click.IntRange(min=1),
                     help="Rows per chunk (default: about 16 MiB of features)."),
        click.option("--nan-policy", default="raise", show_default=True,
                     help="NaN/inf in features: raise, drop, or a number to fill with."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _open(data: str, target: str | None, features: str | None, exclude: str | None,
          fmt: str | None, chunk_rows: int | None, nan_policy: str) -> Any:
    from streamlearn.data.open import open_dataset

    return open_dataset(
        data, target=target, features=_names(features), exclude=_names(exclude) or (),
        format=fmt, chunk_rows=chunk_rows, nan_policy=_nan_policy(nan_policy),
    )


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="streamlearn")
def cli() -> None:
    """Train nonlinear models on data larger than memory, streaming it chunk by chunk."""


@cli.command()
@click.argument("data")
@data_options
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@_user_errors
def info(data: str, target: str | None, features: str | None, exclude: str | None,
         fmt: str | None, chunk_rows: int | None, nan_policy: str, quiet: bool) -> None:
    """Print the schema of DATA and per-feature statistics from one streamed pass.

    DATA is a parquet file or directory, a zarr store, or an fsspec URL of either.

    \b
    Examples:
      streamlearn info train.parquet --target label
      streamlearn info s3://bucket/train.zarr
      streamlearn info data/ --exclude id --nan-policy drop
    """
    from streamlearn.engine.describe import describe
    from streamlearn.engine.local import LocalEngine

    dataset = _open(data, target, features, exclude, fmt, chunk_rows, nan_policy)
    click.echo(dataset.schema)
    click.echo("")
    started = time.perf_counter()
    summary = describe(dataset, engine=LocalEngine(progress=False if quiet else None))
    elapsed = time.perf_counter() - started
    click.echo(summary)
    if not quiet:
        click.echo(f"\n{dataset.n_rows:,} rows streamed in {elapsed:.2f} s "
                   f"({dataset.n_rows / max(elapsed, 1e-9):,.0f} rows/s)", err=True)


@cli.command()
@click.option("--rows", type=click.IntRange(min=10_000), default=None,
              help="Rows of the generated dataset (default 2,000,000).")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@_user_errors
def demo(rows: int | None, quiet: bool) -> None:
    """Generate the built-in demo dataset (once, in the cache) and stream it.

    The data is a binary problem whose label depends on each feature through its own
    non-linear curve, written as parquet under $STREAMLEARN_CACHE (default
    ~/.cache/streamlearn); nothing is downloaded.

    \b
    Examples:
      streamlearn demo
      streamlearn demo --rows 200000 --quiet
    """
    from streamlearn.data.open import open_dataset
    from streamlearn.data.synthetic import DEMO_ROWS, demo_dataset_path
    from streamlearn.engine.describe import describe
    from streamlearn.engine.local import LocalEngine

    n_rows = rows or DEMO_ROWS
    click.echo(f"demo dataset: {n_rows:,} rows, label = sign of a sum of non-linear curves "
               "of 8 features (2 pure noise)")
    started = time.perf_counter()
    path = demo_dataset_path(n_rows)
    click.echo(f"  stored at {path} ({time.perf_counter() - started:.1f} s)")
    dataset = open_dataset(path, target="label")
    click.echo("")
    click.echo(dataset.schema)
    click.echo("")
    started = time.perf_counter()
    summary = describe(dataset, engine=LocalEngine(progress=False if quiet else None))
    elapsed = time.perf_counter() - started
    click.echo(summary)
    click.echo(f"\nstreamed {dataset.n_rows:,} rows in {elapsed:.2f} s "
               f"({dataset.n_rows / max(elapsed, 1e-9):,.0f} rows/s) in chunks of "
               f"{dataset.chunk_rows:,} rows")


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``streamlearn`` console script."""
    cli.main(args=argv, prog_name="streamlearn")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
