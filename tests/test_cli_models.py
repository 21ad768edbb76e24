"""Every model of `streamlearn train --model` trains, predicts and evaluates on the command line.

The files the command writes are checked against the same model loaded in Python: the
streamed predictions equal ``model.predict`` on the test rows, and ``evaluate`` reports the
accuracy (or MSE) computed here with numpy.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner, Result

from streamlearn.cli import MODELS, cli, model_class
from streamlearn.data.synthetic import write_additive_parquet

N_TRAIN, N_TEST = 2000, 500
FEATURES = [f"x{j}" for j in range(8)]


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Labelled train/test parquet files (features x0..x7 next to a label) and a regression copy."""
    root = tmp_path_factory.mktemp("cli-models")
    train = write_additive_parquet(root / "train.parquet", N_TRAIN, seed=3)
    test = write_additive_parquet(root / "test.parquet", N_TEST, seed=4)
    paths = {"train": Path(train), "test": Path(test)}
    for name in ("train", "test"):
        frame = pd.read_parquet(paths[name])
        frame["price"] = (frame["x0"] * frame["x1"] + np.sin(2 * frame["x2"])).astype("float64")
        paths[f"{name}_reg"] = root / f"{name}_reg.parquet"
        frame.drop(columns="label").to_parquet(paths[f"{name}_reg"])
    return paths


CASES = [(name, task) for name, entry in MODELS.items() for task in entry.tasks]


@pytest.mark.parametrize(("name", "task"), CASES, ids=[f"{n}-{t}" for n, t in CASES])
def test_train_predict_evaluate(files: dict[str, Path], tmp_path: Path, name: str,
                                task: str) -> None:
    regression = task == "regression"
    target = "price" if regression else "label"
    train = files["train_reg" if regression else "train"]
    test = files["test_reg" if regression else "test"]
    model_path = tmp_path / f"{name}.slm"
    result = run("train", str(train), "--target", target, "--model", name, "--out",
                 str(model_path), "--no-train-score", "--quiet")
    assert result.exit_code == 0, result.output
    assert model_path.exists()

    cls = model_class(name, task)
    model = cls.load(model_path)
    assert type(model) is cls
    frame = pd.read_parquet(test)
    X = frame[FEATURES].astype(np.float32)
    expected = np.asarray(model.predict(X))

    out = tmp_path / "predictions.parquet"
    # the test file still holds the target column: predict must ignore it
    result = run("predict", str(model_path), str(test), "--out", str(out), "--quiet")
    assert result.exit_code == 0, result.output
    got = pd.read_parquet(out)["prediction"].to_numpy()
    assert len(got) == N_TEST
    if regression:
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)
    else:
        np.testing.assert_array_equal(got, expected)

    result = run("evaluate", str(model_path), str(test), "--target", target, "--quiet")
    assert result.exit_code == 0, result.output
    if regression:
        y = frame[target].to_numpy()
        mse = float(np.mean((expected - y) ** 2))
        shown = re.search(r"^mse\s+([0-9.,]+)$", result.output, re.MULTILINE)
        assert shown is not None, result.output
        assert float(shown.group(1).replace(",", "")) == pytest.approx(mse, rel=1e-3, abs=1e-4)
        assert mse < float(np.var(y)), f"{name} does worse than the mean: mse {mse}"
    else:
        accuracy = float(np.mean(expected == frame[target].to_numpy()))
        assert f"{accuracy:.4f}" in result.output, result.output
        assert accuracy > 0.55, f"{name} learned nothing: accuracy {accuracy}"


def test_train_checkpoint_replays_and_refuses_another_fit(files: dict[str, Path],
                                                          tmp_path: Path) -> None:
    ckpt = tmp_path / "run.ckpt"
    args = ["train", str(files["train"]), "--target", "label", "--model", "mixture",
            "--no-train-score", "--quiet", "--checkpoint", str(ckpt), "--checkpoint-every", "1"]
    first = run(*args, "--out", str(tmp_path / "a.slm"))
    assert first.exit_code == 0, first.output
    assert (ckpt / "progress.zip").exists()
    again = run(*args, "--out", str(tmp_path / "b.slm"))  # every pass replayed from disk
    assert again.exit_code == 0, again.output
    cls = model_class("mixture", "classification")
    X = pd.read_parquet(files["test"])[FEATURES].astype(np.float32)
    np.testing.assert_array_equal(cls.load(tmp_path / "a.slm").decision_function(X),
                                  cls.load(tmp_path / "b.slm").decision_function(X))
    other = run(*args, "--param", "n_components=3", "--out", str(tmp_path / "c.slm"))
    assert other.exit_code == 1
    assert "checkpoint" in other.output.lower() and "n_components" in other.output


@pytest.mark.parametrize("given", ["SuperSparseClassifier", "supersparseclassifier",
                                   "SUPERSPARSE"])
def test_model_named_by_its_class_and_its_probabilities_written(
        files: dict[str, Path], tmp_path: Path, given: str) -> None:
    model_path = tmp_path / "m.slm"
    result = run("train", str(files["train"]), "--target", "label", "--model", given,
                 "--out", str(model_path), "--no-train-score", "--quiet",
                 "-p", "n_prototypes=10", "-p", "max_iter=5")
    assert result.exit_code == 0, result.output
    model = model_class("supersparse", "classification").load(model_path)
    out = tmp_path / "p.parquet"
    result = run("predict", str(model_path), str(files["test"]), "--proba", "--out",
                 str(out), "--quiet")
    assert result.exit_code == 0, result.output
    frame = pd.read_parquet(files["test"])
    proba = model.predict_proba(frame[FEATURES].astype(np.float32))
    got = pd.read_parquet(out)
    columns = [c for c in got.columns if c.startswith("proba_")]
    np.testing.assert_allclose(got[columns].to_numpy(), proba, rtol=1e-6)
    unknown = run("train", str(files["train"]), "--target", "label", "--model",
                  "SuperSparseForest", "--out", str(tmp_path / "x.slm"))
    assert unknown.exit_code == 2 and "'SuperSparseForest' is not one of" in unknown.output


def test_a_named_class_fixes_the_task(files: dict[str, Path], tmp_path: Path) -> None:
    model_path = tmp_path / "r.slm"
    result = run("train", str(files["train_reg"]), "--target", "price", "--model",
                 "SuperSparseRegressor", "--out", str(model_path), "--no-train-score",
                 "--quiet", "-p", "n_prototypes=10", "-p", "max_iter=3")
    assert result.exit_code == 0, result.output
    assert type(model_class("supersparse", "regression").load(model_path)).__name__ \
        == "SuperSparseRegressor"
    # the regressor on text labels is refused, not swapped for the classifier
    frame = pd.read_parquet(files["train"])
    frame["label"] = np.where(frame["label"] == 1, "yes", "no")
    frame.to_parquet(tmp_path / "text.parquet")
    refused = run("train", str(tmp_path / "text.parquet"), "--target", "label", "--model",
                  "SuperSparseRegressor", "--out", str(tmp_path / "x.slm"), "--quiet")
    assert refused.exit_code != 0 and not (tmp_path / "x.slm").exists()
    assert "regression" in refused.output, refused.output
