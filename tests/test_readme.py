"""The README's code runs as written: the quick start in full, every other block's imports.

The quick start's Python block and its commands run in a directory holding the two files
they name (``train.parquet`` and ``test.parquet``, generated here), so that a renamed
method, argument or option fails here before it fails a reader, and without a
``ConvergenceWarning``: the defaults converge on a plain problem. The other Python blocks
name stores that do not exist here (``s3://bucket/...``); each of them must still compile,
and every name it imports from streamlearn or reads off the package (``sl.name``) must
exist.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import io
import re
import shlex
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import accuracy_score

import streamlearn as sl
from streamlearn.cli import cli
from streamlearn.data.synthetic import additive_problem

README = Path(__file__).resolve().parents[1] / "README.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def blocks(text: str, language: str) -> list[str]:
    """The fenced code blocks of ``text`` in ``language``, in order."""
    return [body for lang, body in FENCE.findall(text) if lang == language]


def quick_start() -> str:
    """The README's section "Quick start", up to the next section."""
    text = README.read_text()
    match = re.search(r"^## Quick start\n(.*?)^## ", text, re.MULTILINE | re.DOTALL)
    assert match, "README.md has no section '## Quick start'"
    return match.group(1)


@pytest.fixture()
def tables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> pd.DataFrame:
    """``train.parquet`` and ``test.parquet`` in the working directory (labels as text);
    returns the test rows."""
    frames = []
    for name, rows, seed in (("train", 3000, 0), ("test", 1000, 1)):
        X, y = additive_problem(rows, 6, seed=seed)
        frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(6)])
        frame["label"] = np.where(y == 1, "yes", "no")
        frame.to_parquet(tmp_path / f"{name}.parquet")
        frames.append(frame)
    monkeypatch.chdir(tmp_path)
    return frames[1]


def test_the_quick_start_runs_and_prints_the_test_accuracy(tables: pd.DataFrame) -> None:
    (code,) = blocks(quick_start(), "python")
    printed = io.StringIO()
    namespace: dict[str, object] = {}
    # the defaults converge on a plain problem: a ConvergenceWarning fails the test
    with contextlib.redirect_stdout(printed), warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        exec(compile(code, "README.md: Quick start", "exec"), namespace)
    model = namespace["model"]
    truth = tables["label"].to_numpy()
    expected = accuracy_score(truth, model.predict(tables.drop(columns="label")))
    lines = printed.getvalue().splitlines()
    assert float(lines[0]) == pytest.approx(expected, abs=1e-12)
    assert expected > 0.85  # the generated problem's curves, learned
    assert Path("model.slm").is_file()


def test_the_quick_start_commands_run(tables: pd.DataFrame) -> None:
    (commands,) = blocks(quick_start(), "bash")
    runner = CliRunner()
    for line in commands.strip().splitlines():
        program, *args = shlex.split(line)
        assert program == "streamlearn"
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConvergenceWarning)
            result = runner.invoke(cli, args)
        assert result.exit_code == 0, f"{line}\n{result.output}"
    predicted = pd.read_parquet("predictions.parquet")
    assert len(predicted) == len(tables)
    assert {"prediction", "proba_no", "proba_yes"} <= set(predicted.columns)


def _package_names(tree: ast.AST) -> list[tuple[str, str]]:
    """(module, name) of each ``from streamlearn... import name``, and ("streamlearn",
    name) of each ``sl.name`` read."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("streamlearn"):
            found += [(node.module, alias.name) for alias in node.names]
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id == "sl"):
            found.append(("streamlearn", node.attr))
    return found


@pytest.mark.parametrize("index", range(len(blocks(README.read_text(), "python"))))
def test_every_python_block_compiles_and_names_what_the_package_has(index: int) -> None:
    code = blocks(README.read_text(), "python")[index]
    tree = ast.parse(code)  # a SyntaxError names the block's line
    names = _package_names(tree)
    missing = [f"{module}.{name}" for module, name in names
               if not hasattr(importlib.import_module(module), name)]
    assert not missing, f"README block {index} names what the package lacks: {missing}"


def test_the_package_names_check_sees_a_missing_name() -> None:
    tree = ast.parse("import streamlearn as sl\nfrom streamlearn.models import NoSuchModel\n"
                     "sl.open_dataset, sl.no_such_function")
    names = _package_names(tree)
    assert ("streamlearn.models", "NoSuchModel") in names
    assert ("streamlearn", "no_such_function") in names
    assert not hasattr(sl, "no_such_function")
