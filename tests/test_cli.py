"""The ``streamlearn`` command: output, exit codes, errors as one readable line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from streamlearn.cli import cli
from tests.conftest import Reference, write_parquet_dir


def test_info_prints_schema_and_statistics(ref: Reference, tmp_path: Path) -> None:
    root = write_parquet_dir(ref.frame, tmp_path / "d")
    result = CliRunner().invoke(cli, ["info", str(root), "--target", "label", "--exclude", "w",
                                      "--quiet"])
    assert result.exit_code == 0, result.output
    assert "rows     : 1,000" in result.output
    assert "classes  : 3 (3, 5, 7)" in result.output
    assert "label (classification)" in result.output
    mean_a = f"{ref.frame['a'].mean():.4g}"
    assert mean_a[:5] in result.output


def test_data_problems_exit_1_with_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["info", str(tmp_path / "missing.parquet")])
    assert result.exit_code == 1
    assert "SourceError: no such file or directory" in result.output
    assert "Traceback" not in result.output


def test_usage_errors_exit_2(ref: Reference, tmp_path: Path) -> None:
    root = write_parquet_dir(ref.frame, tmp_path / "d")
    assert CliRunner().invoke(cli, ["info"]).exit_code == 2
    assert CliRunner().invoke(cli, ["info", str(root), "--nan-policy", "maybe"]).exit_code == 2
    assert CliRunner().invoke(cli, ["frobnicate"]).exit_code == 2


def test_help_has_examples() -> None:
    for command in (["info", "--help"], ["demo", "--help"]):
        result = CliRunner().invoke(cli, command)
        assert result.exit_code == 0 and "Examples:" in result.output


def test_demo_runs_end_to_end(tmp_path: Path) -> None:
    result = CliRunner(env={"STREAMLEARN_CACHE": str(tmp_path)}).invoke(
        cli, ["demo", "--rows", "20000", "--quiet"])
    assert result.exit_code == 0, result.output
    assert "rows     : 20,000" in result.output
    assert "streamed 20,000 rows" in result.output


def test_console_script_exit_code(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "streamlearn.cli", "info", str(tmp_path / "nope")],
        capture_output=True, text=True, check=False,
    )
    assert proc.returncode == 1
    assert "Error: SourceError" in proc.stderr
