"""The ``streamlearn`` command: output, exit codes, errors as one readable line."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import click
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
import scipy.sparse as sp
from click.testing import CliRunner, Result
from fsspec.implementations.memory import MemoryFileSystem
from sklearn.metrics import confusion_matrix, log_loss

from streamlearn.cli import (
    additive_curves,
    cli,
    metrics_table,
    model_class,
    multiclass_line,
    pairs_line,
    parse_param,
    parse_search,
    passes_line,
    sparkline,
)
from streamlearn.data.synthetic import additive_problem
from streamlearn.io import load_model
from streamlearn.models import AdditiveSVC
from streamlearn.models.registry import MODELS, ModelEntry
from tests.conftest import Reference, write_parquet_dir

FEATURE_NAMES = [f"f{j}" for j in range(8)]


def run(*args: str, **env: str) -> Result:
    return CliRunner(env=env or None).invoke(cli, list(args))


@dataclass
class Trained:
    """A small labelled parquet file and a model trained on it by ``streamlearn train``."""

    frame: pd.DataFrame
    data: Path
    model: Path
    output: str


def labelled_frame(n: int, seed: int) -> pd.DataFrame:
    X, y = additive_problem(n, seed=seed)
    frame = pd.DataFrame(X, columns=FEATURE_NAMES)
    frame["label"] = np.where(y == 1, "yes", "no")
    frame["id"] = [f"r{seed}-{i}" for i in range(n)]
    return frame


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Trained:
    root = tmp_path_factory.mktemp("cli")
    frame = labelled_frame(3000, seed=3)
    data = root / "train.parquet"
    frame.to_parquet(data, row_group_size=700)
    model = root / "model.slm"
    result = run("train", str(data), "--target", "label", "--model", "additive",
                 "--exclude", "id", "--out", str(model), "--epochs", "2", "--seed", "5",
                 "-p", "n_bases=12", "-p", "embedding=bspline", "-p", "tol=null",
                 "-p", "interactions=0", "--quiet")
    assert result.exit_code == 0, result.output
    return Trained(frame, data, model, result.output)


# -- train --------------------------------------------------------------------------------
def test_train_sets_parameters_and_reports_training_metrics(trained: Trained) -> None:
    model = AdditiveSVC.load(trained.model)
    assert (model.epochs, model.random_state, model.n_bases) == (2, 5, 12)
    assert isinstance(model.n_bases, int) and model.embedding == "bspline" and model.tol is None
    assert tuple(model.feature_names_in_) == tuple(FEATURE_NAMES)
    assert model.classes_.tolist() == ["no", "yes"]
    predicted = model.predict(trained.frame[FEATURE_NAMES])
    accuracy = float(np.mean(predicted == trained.frame["label"].to_numpy()))
    assert f"accuracy  {accuracy:.4f}" in trained.output
    assert "3,000 rows x 8 features" in trained.output
    assert "classes  : 2 (no, yes)" in trained.output
    assert f"saved to {trained.model}" in trained.output


def test_train_reports_the_passes_and_bytes_of_the_fit(trained: Trained) -> None:
    model = AdditiveSVC.load(trained.model)
    # describe, two epochs (tol=null), calibration; 8 float32 features and an int32 code
    assert (model.n_passes_, model.bytes_read_) == (4.0, 4 * 3000 * (8 * 4 + 4))
    assert "  passes   : read the data 4.0 times, 421.9 KiB\n" in trained.output
    assert passes_line(model, 3000) == "read the data 4.0 times, 421.9 KiB"


def test_train_says_what_the_default_pairs_did(tmp_path: Path) -> None:
    frame = labelled_frame(3000, seed=4)
    frame.to_parquet(tmp_path / "t.parquet")
    result = run("train", str(tmp_path / "t.parquet"), "--target", "label", "--model",
                 "additive", "--exclude", "id", "--out", str(tmp_path / "m.slm"), "--quiet")
    assert result.exit_code == 0, result.output
    model = AdditiveSVC.load(tmp_path / "m.slm")
    check = model.interaction_check_
    line = next(x for x in result.output.splitlines() if x.startswith("  pairs    : "))
    assert f"{len(check['screened'])} screened" in line
    assert ("not kept" in line) == (not check["kept"])
    assert f"{check['held_out_log_loss_without']:.4f} without" in line


def test_passes_line_of_a_model_without_counts_uses_the_recorded_log() -> None:
    from streamlearn.engine.accounting import PassLog, open_pass

    log = PassLog()
    open_pass(log, "a", 100, 100).add(100, 2048)
    open_pass(log, "b", 100, 50).add(50, 1024)
    assert passes_line(object(), 100, log) == "read the data 1.5 times, 3.0 KiB"
    assert passes_line(object(), 100) is None


def test_common_flags_map_to_constructor_parameters(trained: Trained, tmp_path: Path) -> None:
    out = tmp_path / "m.slm"
    result = run("train", str(trained.data), "-t", "label", "-m", "additive", "--exclude", "id",
                 "--C", "3.5", "--lam", "0.01", "--epochs", "1", "--chunk-rows", "500",
                 "-o", str(out), "--no-train-score", "-q")
    assert result.exit_code == 0, result.output
    model = AdditiveSVC.load(out)
    assert (model.C, model.lam, model.epochs, model.chunk_rows) == (3.5, 0.01, 1, 500)
    assert model.lam_ == 0.01
    assert "on the training data" not in result.output


def test_param_names_are_validated_against_the_constructor(trained: Trained,
                                                           tmp_path: Path) -> None:
    result = run("train", str(trained.data), "-t", "label", "-m", "additive", "--exclude", "id",
                 "-o", str(tmp_path / "m.slm"), "-p", "nbases=3")
    assert result.exit_code == 2
    assert "AdditiveSVC has no parameter 'nbases'" in result.output
    assert "n_bases" in result.output and "calibration_fraction" in result.output
    assert not (tmp_path / "m.slm").exists()
    bad_value = run("train", str(trained.data), "-t", "label", "-m", "additive", "--exclude",
                    "id", "-o", str(tmp_path / "m.slm"), "-p", "solver=sgd")
    assert bad_value.exit_code == 2 and "solver" in bad_value.output
    assert "'sgd'" in bad_value.output
    no_equals = run("train", str(trained.data), "-t", "label", "-m", "additive", "-o",
                    str(tmp_path / "m.slm"), "-p", "n_bases")
    assert no_equals.exit_code == 2 and "is not NAME=VALUE" in no_equals.output


def test_parse_param_reads_json_else_string() -> None:
    assert parse_param("n=20") == ("n", 20)
    assert parse_param("x=0.5") == ("x", 0.5)
    assert parse_param("flag=false") == ("flag", False)
    assert parse_param("tol=null") == ("tol", None)
    assert parse_param("random_state=None") == ("random_state", None)
    assert parse_param("average=False") == ("average", False)
    assert parse_param("sizes=[1, 2]") == ("sizes", [1, 2])
    assert parse_param("embedding=fourier") == ("embedding", "fourier")
    assert parse_param("expr=a=b") == ("expr", "a=b")


def test_model_registry_names_an_unavailable_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(MODELS, "ghost",
                        ModelEntry("streamlearn.models:GhostClassifier", None, "not written"))
    with pytest.raises(click.ClickException, match=r"'ghost' \(streamlearn.models.Ghost"):
        model_class("ghost", "classification")
    with pytest.raises(click.ClickException, match="handles classification targets"):
        model_class("ghost", "regression")
    assert model_class("additive", "classification") is AdditiveSVC
    for entry in MODELS.values():
        for path in (entry.classifier, entry.regressor):
            assert path is None or path.count(":") == 1


def test_parse_search_reads_each_value_as_param_does() -> None:
    assert parse_search("C=0.1,1,10") == ("C", [0.1, 1, 10])
    assert parse_search("embedding=linear, bspline") == ("embedding", ["linear", "bspline"])
    assert parse_search('n_bases=[8, "auto"]') == ("n_bases", [8, "auto"])
    for bad in ("C", "=1,2", "C="):
        with pytest.raises(click.BadParameter):
            parse_search(bad)


def test_train_search_saves_the_setting_the_python_search_chooses(trained: Trained,
                                                                  tmp_path: Path) -> None:
    from streamlearn.data.open import open_dataset
    from streamlearn.models import StreamSearchCV

    out = tmp_path / "tuned.slm"
    result = run("train", str(trained.data), "-t", "label", "-m", "additive", "--exclude",
                 "id", "-p", "interactions=0", "--search", "C=0.001,1", "-s",
                 "n_bases=6,12", "--no-train-score", "--quiet", "-o", str(out))
    assert result.exit_code == 0, result.output
    reference = StreamSearchCV(AdditiveSVC(progress=False, interactions=0),
                               {"C": [0.001, 1], "n_bases": [6, 12]}, random_state=0)
    reference.fit(open_dataset(trained.data, target="label", exclude=["id"]))
    model = AdditiveSVC.load(out)
    assert {"C": model.C, "n_bases": model.n_bases} == reference.best_params_
    np.testing.assert_allclose(model.decision_function(trained.frame[FEATURE_NAMES][:50]),
                               reference.decision_function(trained.frame[FEATURE_NAMES][:50]),
                               rtol=1e-6, atol=1e-9)
    assert "searched 4 settings inside the stream" in result.output
    for rank, score in zip(reference.cv_results_["rank_test_score"],
                           reference.cv_results_["mean_test_score"], strict=True):
        assert f"{rank:>3d}  held-out score {score:.4f}" in result.output
    assert f"n_bases={reference.best_params_['n_bases']!r}" in result.output
    # the passes line counts the whole search (race, held-out rows, refit), not the refit
    line = next(x for x in result.output.splitlines() if x.startswith("  passes   : "))
    searched = float(line.split("read the data ")[1].split(" ")[0])
    assert searched == pytest.approx(reference.n_passes_, abs=0.05)
    assert searched > model.n_passes_ + 1


def test_train_search_usage_errors_exit_2(trained: Trained, tmp_path: Path) -> None:
    data, out = str(trained.data), str(tmp_path / "m.slm")
    base = ("train", data, "-t", "label", "--exclude", "id", "-o", out)
    no_lanes = run(*base, "-m", "spjsboost", "--search", "n_rounds=5,10")
    assert no_lanes.exit_code == 2 and "partial_fit" in no_lanes.output
    assert "additive" in no_lanes.output
    unknown = run(*base, "-m", "additive", "--search", "nonsense=1,2")
    assert unknown.exit_code == 2 and "nonsense" in unknown.output
    twice = run(*base, "-m", "additive", "-s", "C=1,2", "-s", "C=3")
    assert twice.exit_code == 2 and "twice" in twice.output
    bad = run(*base, "-m", "additive", "-s", "C=1,abc")  # refused before reading the data
    assert bad.exit_code == 2 and "C='abc'" in bad.output and "'--search'" in bad.output
    for fixed in (("--C", "5"), ("-p", "C=5")):  # one value and a search of the same one
        both = run(*base, "-m", "additive", *fixed, "-s", "C=1,2")
        assert both.exit_code == 2 and "both set C" in both.output
    assert not Path(out).exists()


def test_columns_named_with_commas_and_edge_spaces(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    x = rng.normal(size=(300, 3))
    frame = pd.DataFrame({"c,d": x[:, 0], " price": x[:, 1], 'say "hi"': x[:, 2],
                          "label": (x[:, 0] + x[:, 1] > 0).astype(np.int64)})
    data, model_path = tmp_path / "t.parquet", tmp_path / "m.slm"
    frame.to_parquet(data)
    trained = run("train", str(data), "-t", "label", "-m", "additive", "--exclude",
                  '"say ""hi"""', "-o", str(model_path), "--epochs", "1", "-p",
                  "interactions=0", "-p", "n_bases=5", "-p", "tol=null", "--quiet")
    assert trained.exit_code == 0, trained.output
    model = AdditiveSVC.load(model_path)
    assert list(model.feature_names_in_) == ["c,d", " price"]
    # predict and evaluate read the model's columns by their exact names
    predicted = run("predict", str(model_path), str(data), "-o", str(tmp_path / "p.parquet"))
    assert predicted.exit_code == 0, predicted.output
    np.testing.assert_array_equal(pd.read_parquet(tmp_path / "p.parquet")["prediction"],
                                  model.predict(frame[["c,d", " price"]]))
    evaluated = run("evaluate", str(model_path), str(data), "-t", "label")
    assert evaluated.exit_code == 0, evaluated.output
    # quoted names, in one value or in repeated options, beside plain ones
    for options, shown in ((("--features", '" price", "c,d"'), "2 ( price, c,d)"),
                           (("--features", '" price"', "--features", '"c,d"'), "2 ( price, c,d)"),
                           (("--exclude", '"c,d" , "say ""hi"""'), "1 ( price)")):
        result = run("info", str(data), "-t", "label", *options, "--quiet")
        assert result.exit_code == 0, result.output
        assert f"features : {shown}\n" in result.output
    unclosed = run("info", str(data), "-t", "label", "--exclude", '"c,d')
    assert unclosed.exit_code == 2 and "in double quotes ends with a quote" in unclosed.output


def test_train_usage_errors_exit_2(trained: Trained, tmp_path: Path) -> None:
    data, out = str(trained.data), str(tmp_path / "m.slm")
    assert run("train", data, "-t", "label", "-m", "additive").exit_code == 2  # no --out
    assert run("train", data, "-t", "label", "-m", "forest", "-o", out).exit_code == 2
    assert run("train", data, "-t", "label", "-m", "additive", "--epochs", "0",
               "-o", out).exit_code == 2
    no_target = run("train", data, "-m", "additive", "--exclude", "label,id", "-o", out)
    assert no_target.exit_code == 2 and "--target" in no_target.output


def test_options_that_cannot_work_are_refused_before_reading(trained: Trained,
                                                             tmp_path: Path) -> None:
    data, out = str(trained.data), str(tmp_path / "m.slm")
    for policy in ("nan", "inf", "often"):
        bad = run("info", data, "-t", "label", "--nan-policy", policy)
        assert bad.exit_code == 2 and "finite number" in bad.output
    not_two = run("train", data, "-t", "label", "--exclude", "id", "--hash-features", "1000",
                  "-o", out)
    assert not_two.exit_code == 2 and "power of two" in not_two.output
    csv = tmp_path / "t.csv"
    trained.frame.head(50).to_csv(csv, index=False)
    hashed_csv = run("train", str(csv), "-t", "label", "--hash-features", "1024", "-o", out)
    assert hashed_csv.exit_code == 1 and "applies to parquet and svmlight" in hashed_csv.output
    a_file = tmp_path / "notdir"
    a_file.write_text("x")
    for command in (("train", data, "-t", "label", "--exclude", "id"),
                    ("predict", str(trained.model), data)):
        refused = run(*command, "-o", str(a_file / "m.slm"))
        assert refused.exit_code == 2 and "is not a directory" in refused.output
        assert "trained" not in refused.output
        missing = run(*command, "-o", str(tmp_path / "nodir" / "m.slm"))
        assert missing.exit_code == 2 and "nodir does not exist" in missing.output
        assert "not a directory" not in missing.output
    folder = tmp_path / "data"
    folder.mkdir()
    trained.frame.to_parquet(folder / "part.parquet")
    inside = run("convert", str(folder), "-t", "label", "-o", str(folder / "out.zarr"))
    assert inside.exit_code == 2 and "would overwrite DATA" in inside.output
    assert not (folder / "out.zarr").exists()


@pytest.mark.parametrize("upload", [False, True], ids=["local", "upload"])
def test_a_model_that_cannot_be_saved_where_asked_is_saved_elsewhere(
        trained: Trained, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        upload: bool) -> None:
    from streamlearn.errors import ModelFileError

    out = tmp_path / "m.slm"
    save = AdditiveSVC.save

    def failing(self: AdditiveSVC, path: Any) -> Any:
        if Path(path) == out:
            cause = OSError(28, "No space left on device")
            if upload:  # an fsspec upload wraps the OSError
                raise ModelFileError(f"could not write the model: {cause}") from cause
            raise cause
        return save(self, path)

    monkeypatch.setattr(AdditiveSVC, "save", failing)
    result = run("train", str(trained.data), "-t", "label", "--exclude", "id", "--epochs", "2",
                 "-p", "interactions=0", "-o", str(out), "-q")
    assert result.exit_code == 1
    assert "No space left on device" in result.output
    spare = Path(result.output.split("saved to ")[1].split(" instead")[0])
    model = AdditiveSVC.load(spare)
    X = trained.frame[FEATURE_NAMES].astype(np.float32)
    assert model.score(X, trained.frame["label"]) > 0.8


def test_a_named_regressor_reads_the_default_target_as_numbers(tmp_path: Path) -> None:
    from sklearn.datasets import dump_svmlight_file

    rng = np.random.default_rng(0)
    X = rng.random((300, 4))
    labels = (X[:, 0] > 0.5).astype(int)  # whole numbers: read as classes by default
    dump_svmlight_file(X, labels, str(tmp_path / "d.svm"))
    for name, cls in (("SuperSparseRegressor", "SuperSparseRegressor"),
                      ("supersparse", "SuperSparseClassifier")):
        result = run("train", str(tmp_path / "d.svm"), "-m", name, "-o",
                     str(tmp_path / f"{name}.slm"), "-q")
        assert result.exit_code == 0, result.output
        assert result.output.startswith(f"trained {cls}(")


def test_train_without_model_takes_the_default_of_the_target(trained: Trained,
                                                              tmp_path: Path) -> None:
    options = ("--exclude", "id", "--epochs", "2", "--seed", "5", "-p", "interactions=0",
               "-q")
    default, chosen = tmp_path / "default.slm", tmp_path / "chosen.slm"
    result = run("train", str(trained.data), "-t", "label", "-o", str(default), *options)
    assert result.exit_code == 0, result.output
    assert run("train", str(trained.data), "-t", "label", "-m", "additive", "-o",
               str(chosen), *options).exit_code == 0
    X = trained.frame[FEATURE_NAMES].astype(np.float32)
    np.testing.assert_array_equal(AdditiveSVC.load(default).decision_function(X),
                                  AdditiveSVC.load(chosen).decision_function(X))
    # a numeric target: the regression default, said unless --quiet
    frame = trained.frame.drop(columns=["label", "id"]).assign(
        price=trained.frame[FEATURE_NAMES[0]] ** 2)
    frame.to_parquet(tmp_path / "prices.parquet")
    result = run("train", str(tmp_path / "prices.parquet"), "-t", "price", "-o",
                 str(tmp_path / "price.slm"), "--no-train-score")
    assert result.exit_code == 0, result.output
    assert "model: sppr (the default for a regression target" in result.output
    assert "trained SparsePPRRegressor()" in result.output


def test_a_classifier_on_a_continuous_target_names_the_regressors_options(
        trained: Trained, tmp_path: Path) -> None:
    frame = trained.frame.drop(columns=["label", "id"]).assign(
        price=trained.frame[FEATURE_NAMES[0]] * 1.5 + 0.25)
    frame.to_parquet(tmp_path / "prices.parquet")
    result = run("train", str(tmp_path / "prices.parquet"), "-t", "price", "-m", "additive",
                 "-o", str(tmp_path / "m.slm"))
    assert result.exit_code == 1 and "LabelError" in result.output
    assert "--model sppr or --model supersparse" in result.output


def test_a_model_of_hashed_rows_predicts_and_evaluates_data_hashed_the_same_way(
        tmp_path: Path) -> None:
    """train --hash-features keeps N and the columns hashed on the model; predict and
    evaluate hash their data by them (an excluded id column of the training file stays
    out), and score what the Python API scores on the same rows hashed by hand."""
    from streamlearn import open_dataset
    from streamlearn.io import load_model

    rng = np.random.default_rng(1)
    n = 3000
    city = rng.choice(["lima", "oslo", "rome", "kyiv"], n)
    words = [list(rng.choice(["good", "bad", "meh"], rng.integers(1, 4))) for _ in range(n)]
    x = rng.normal(size=n)
    score = 1.5 * (city == "rome") + np.array([w.count("good") - w.count("bad")
                                               for w in words]) + x
    frame = pd.DataFrame({"id": np.arange(n), "city": city, "words": words, "x": x,
                          "label": (score > 0.5).astype(int)})
    frame.iloc[:2000].to_parquet(tmp_path / "train.parquet")
    frame.iloc[2000:].to_parquet(tmp_path / "test.parquet")
    model_path = tmp_path / "h.slm"
    result = run("train", str(tmp_path / "train.parquet"), "-t", "label", "--exclude", "id",
                 "--hash-features", "1024", "-o", str(model_path))
    assert result.exit_code == 0, result.output
    assert "embedding: linear (hashed features" in result.output
    model = load_model(model_path)
    assert model.hash_features_ == 1024 and model.hashed_columns_ == ("city", "words", "x")
    evaluated = run("evaluate", str(model_path), str(tmp_path / "test.parquet"), "-t", "label")
    assert evaluated.exit_code == 0, evaluated.output
    by_hand = open_dataset(str(tmp_path / "test.parquet"), target="label", hash_features=1024,
                           features=["city", "words", "x"])
    accuracy = model.score(by_hand)
    assert accuracy > 0.85
    assert f"accuracy  {accuracy:.4f}" in evaluated.output
    predicted = run("predict", str(model_path), str(tmp_path / "test.parquet"), "-o",
                    str(tmp_path / "p.parquet"), "--keep", "id", "--keep", "city")
    assert predicted.exit_code == 0, predicted.output
    written = pd.read_parquet(tmp_path / "p.parquet")
    got = written["prediction"].to_numpy()
    assert np.mean(got == frame.label.iloc[2000:].to_numpy()) == pytest.approx(accuracy)
    # --keep copies columns the hashed rows do not list, an excluded one among them
    np.testing.assert_array_equal(written["id"], frame.id.iloc[2000:])
    np.testing.assert_array_equal(written["city"], frame.city.iloc[2000:])
    # a refit on plain rows forgets the hashing
    model.fit(frame[["x"]].to_numpy(), frame.label)
    assert not hasattr(model, "hash_features_") and not hasattr(model, "hashed_columns_")


def test_info_and_convert_hash_svmlight_words(tmp_path: Path) -> None:
    """An svmlight file whose features are words is read hashed by info and convert too;
    the store holds the hashed columns that train reads from the file."""
    from streamlearn import open_dataset

    rng = np.random.default_rng(4)
    lines = [f"{int(rng.integers(2))} " + " ".join(
        f"{w}:{rng.integers(1, 4)}" for w in rng.choice(["red", "tea", "sky", "ant"], 2,
                                                         replace=False))
        for _ in range(300)]
    (tmp_path / "w.svm").write_text("\n".join(lines) + "\n")
    plain = run("convert", str(tmp_path / "w.svm"), "-o", str(tmp_path / "a.zarr"))
    assert plain.exit_code == 1 and "hash" in plain.output
    described = run("info", str(tmp_path / "w.svm"), "--hash-features", "64")
    assert described.exit_code == 0, described.output
    converted = run("convert", str(tmp_path / "w.svm"), "--hash-features", "64", "-o",
                    str(tmp_path / "w.zarr"))
    assert converted.exit_code == 0, converted.output
    hashed = open_dataset(str(tmp_path / "w.svm"), hash_features=64)
    stored = open_dataset(str(tmp_path / "w.zarr"))
    assert stored.n_rows == hashed.n_rows == 300
    a = np.vstack([c.X.toarray() for c in hashed.chunks()])
    b = np.vstack([c.X.toarray() if hasattr(c.X, "toarray") else c.X for c in stored.chunks()])
    np.testing.assert_array_equal(a, b)
    bad = run("convert", str(tmp_path / "w.svm"), "--hash-features", "63", "-o",
              str(tmp_path / "b.zarr"))
    assert bad.exit_code == 2 and "power of two" in bad.output


def test_predict_keeps_the_label_of_hashed_svmlight_rows(tmp_path: Path) -> None:
    """--keep reads svmlight words hashed, as the model read its training file (read
    plainly, they are not indices), and copies each row's label beside its prediction."""
    rng = np.random.default_rng(5)
    labels = rng.integers(2, size=300)
    lines = [f"{y} " + " ".join(f"{w}:{rng.integers(1, 4)}" for w in rng.choice(
        ["red", "tea", "sky", "ant"], 2, replace=False)) for y in labels]
    (tmp_path / "w.svm").write_text("\n".join(lines) + "\n")
    trained = run("train", str(tmp_path / "w.svm"), "--hash-features", "64", "-o",
                  str(tmp_path / "w.slm"), "-q", "--no-train-score")
    assert trained.exit_code == 0, trained.output
    result = run("predict", str(tmp_path / "w.slm"), str(tmp_path / "w.svm"), "-o",
                 str(tmp_path / "p.parquet"), "--keep", "y", "-q")
    assert result.exit_code == 0, result.output
    written = pd.read_parquet(tmp_path / "p.parquet")
    np.testing.assert_array_equal(written["y"], labels)


def test_probability_columns_name_whole_number_labels_without_a_point(tmp_path: Path) -> None:
    """svmlight labels are read as floats (1.0); the columns are proba_0 and proba_1, as
    for a model trained on the same rows from any other source."""
    from sklearn.datasets import dump_svmlight_file

    rng = np.random.default_rng(3)
    X = rng.random((500, 3))
    y = (X[:, 0] > 0.5).astype(int)
    dump_svmlight_file(X, y, str(tmp_path / "t.svm"), zero_based=True)
    result = run("train", str(tmp_path / "t.svm"), "-o", str(tmp_path / "m.slm"), "-q",
                 "-p", "embedding=linear")
    assert result.exit_code == 0, result.output
    result = run("predict", str(tmp_path / "m.slm"), str(tmp_path / "t.svm"), "--proba",
                 "-o", str(tmp_path / "p.parquet"), "-q")
    assert result.exit_code == 0, result.output
    assert list(pd.read_parquet(tmp_path / "p.parquet").columns) == [
        "prediction", "proba_0", "proba_1"]


def test_train_data_problems_exit_1(trained: Trained, tmp_path: Path) -> None:
    out = str(tmp_path / "m.slm")
    missing = run("train", str(tmp_path / "none.parquet"), "-t", "y", "-m", "additive", "-o", out)
    assert missing.exit_code == 1 and "SourceError" in missing.output
    strings = run("train", str(trained.data), "-t", "label", "-m", "additive", "-o", out)
    assert strings.exit_code == 1
    assert "non-numeric feature column" in strings.output and "'id'" in strings.output
    assert "Traceback" not in strings.output


# -- predict ------------------------------------------------------------------------------
def test_predict_round_trip_matches_the_python_api(trained: Trained, tmp_path: Path) -> None:
    test = labelled_frame(1500, seed=4)
    test = test[["id", *FEATURE_NAMES[::-1], "label"]]  # other column order, extra columns
    data = tmp_path / "test.parquet"
    test.to_parquet(data, row_group_size=400)
    out = tmp_path / "pred.parquet"
    result = run("predict", str(trained.model), str(data), "--out", str(out), "--proba",
                 "--keep", "id", "--row-index", "--chunk-rows", "256", "-q")
    assert result.exit_code == 0, result.output
    assert "wrote 1,500 predictions" in result.output
    written = pq.ParquetFile(out)
    assert written.metadata.num_row_groups == -(-1500 // 256)  # one row group per chunk
    got = pd.read_parquet(out)
    assert list(got.columns) == ["id", "row", "prediction", "proba_no", "proba_yes"]
    model = AdditiveSVC.load(trained.model)
    X = test[FEATURE_NAMES].astype(np.float32)
    np.testing.assert_array_equal(got["id"], test["id"])
    np.testing.assert_array_equal(got["row"], np.arange(1500))
    np.testing.assert_array_equal(got["prediction"], model.predict(X))
    np.testing.assert_allclose(got[["proba_no", "proba_yes"]], model.predict_proba(X),
                               rtol=1e-12)
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


class LastingMemory(MemoryFileSystem):
    """An fsspec filesystem reached by URL only, standing for a remote one (``s3://``):
    files kept in this process, where the test reads them back, apart from ``memory://``'s."""

    protocol = "clitest"
    store: ClassVar[dict[str, Any]] = {}
    pseudo_dirs: ClassVar[list[str]] = [""]

    @classmethod
    def _strip_protocol(cls, path: Any) -> Any:
        return MemoryFileSystem._strip_protocol(str(path).removeprefix("clitest://"))


@pytest.mark.parametrize("command", ["train", "chained", "predict", "convert", "explain"])
def test_an_out_in_the_process_memory_is_refused(trained: Trained, command: str) -> None:
    """fsspec's memory:// ends with the command's process: an output there would be
    reported written and be gone when the command returns, so it is refused before any
    work, and nothing is written there."""
    import fsspec

    memory = fsspec.filesystem("memory")
    url = f"memory://cli-{uuid.uuid4().hex}"
    data, model = str(trained.data), str(trained.model)
    args = {"train": ("train", data, "-t", "label", "--exclude", "id", "-o", f"{url}/m.slm"),
            "chained": ("train", data, "-t", "label", "--exclude", "id", "-o",
                           f"simplecache::{url}/m.slm"),
            "predict": ("predict", model, data, "-o", f"{url}/p.parquet"),
            "convert": ("convert", data, "-t", "label", "-o", f"{url}/d.zarr"),
            "explain": ("explain", model, data, "-o", f"{url}/report")}[command]
    result = run(*args, "-q")
    assert result.exit_code == 2, result.output
    assert "fsspec's in-memory filesystem" in result.output
    assert "lost on exit" in result.output
    assert not memory.exists(url)


def test_a_checkpoint_is_a_local_directory(trained: Trained, tmp_path: Path) -> None:
    """--checkpoint takes a local directory: a URL (memory:// among them) would be taken
    for a local folder named after the protocol, so it is refused."""
    result = run("train", str(trained.data), "-t", "label", "--exclude", "id", "-o",
                 str(tmp_path / "m.slm"), "--checkpoint", "memory://ck", "-q")
    assert result.exit_code == 2, result.output
    assert "a checkpoint is a local directory" in result.output
    assert not (tmp_path / "m.slm").exists() and not Path("memory:").exists()
    # an empty path is no directory: it had filled the working directory with checkpoints
    for empty in ("", "file://"):
        result = run("train", str(trained.data), "-t", "label", "--exclude", "id", "-o",
                     str(tmp_path / "m.slm"), "--checkpoint", empty, "-q")
        assert result.exit_code == 2, result.output
        assert "an empty path names no directory" in result.output
    assert not (tmp_path / "m.slm").exists() and not Path("progress.zip").exists()


def test_models_and_predictions_go_to_and_come_from_fsspec_urls(trained: Trained,
                                                                tmp_path: Path) -> None:
    """``--out`` of train and predict, and MODEL, may be fsspec URLs: the files land on
    that filesystem (here one kept in this process under a protocol of its own: fsspec's
    ``memory://`` is refused as an output, as it ends with the command's process), not in
    a local folder named after the protocol, and hold what the local files hold."""
    import fsspec

    from streamlearn.io import load_model

    fsspec.register_implementation("clitest", LastingMemory, clobber=True)
    memory = fsspec.filesystem("clitest")
    prefix = f"clitest://cli-{uuid.uuid4().hex}"
    result = run("train", str(trained.data), "-t", "label", "--exclude", "id", "-p",
                 "interactions=0", "--epochs", "2", "-q", "-o", f"{prefix}/models/m.slm")
    assert result.exit_code == 0, result.output
    assert memory.exists(f"{prefix}/models/m.slm")
    assert not any(p.name.startswith("clitest") for p in Path.cwd().iterdir())
    test = labelled_frame(300, seed=9)
    test.to_parquet(tmp_path / "test.parquet")
    result = run("predict", f"{prefix}/models/m.slm", str(tmp_path / "test.parquet"),
                 "-o", f"{prefix}/out/p.parquet", "-q")
    assert result.exit_code == 0, result.output
    with memory.open(f"{prefix}/out/p.parquet", "rb") as fh:
        got = pd.read_parquet(fh)
    model = load_model(f"{prefix}/models/m.slm")
    X = test[FEATURE_NAMES].astype(np.float32)
    np.testing.assert_array_equal(got["prediction"], model.predict(X))
    model.save(tmp_path / "local.slm")
    np.testing.assert_array_equal(AdditiveSVC.load(tmp_path / "local.slm").predict(X),
                                  got["prediction"])
    missing = run("predict", f"{prefix}/models/none.slm", str(tmp_path / "test.parquet"),
                  "-o", str(tmp_path / "p.parquet"))
    assert missing.exit_code != 0 and "no model file at" in missing.output


@pytest.mark.parametrize("name, sep", [("p.csv", ","), ("p.tsv.gz", "\t"), ("P.CSV.BZ2", ","),
                                       ("p.tsv.bz2", "\t")])
def test_predict_writes_the_format_its_name_asks_for(trained: Trained, tmp_path: Path,
                                                      name: str, sep: str) -> None:
    test = labelled_frame(700, seed=6)
    data = tmp_path / "test.parquet"
    test.to_parquet(data, row_group_size=300)
    out = tmp_path / name
    result = run("predict", str(trained.model), str(data), "-o", str(out), "--proba",
                 "--keep", "id", "--chunk-rows", "256", "-q")
    assert result.exit_code == 0, result.output
    got = pd.read_csv(out, sep=sep)  # pandas infers the compression from the name
    assert list(got.columns) == ["id", "prediction", "proba_no", "proba_yes"]
    model = AdditiveSVC.load(trained.model)
    X = test[FEATURE_NAMES].astype(np.float32)
    np.testing.assert_array_equal(got["id"], test["id"])
    np.testing.assert_array_equal(got["prediction"], model.predict(X))
    np.testing.assert_allclose(got[["proba_no", "proba_yes"]], model.predict_proba(X),
                               rtol=1e-6)


def test_predict_refuses_an_out_of_unknown_format_before_reading(trained: Trained,
                                                                 tmp_path: Path) -> None:
    result = run("predict", str(trained.model), str(tmp_path / "missing.parquet"), "-o",
                 str(tmp_path / "p.txt"))
    assert result.exit_code == 2
    assert "cannot tell which format to write" in result.output and ".csv" in result.output
    assert not (tmp_path / "p.txt").exists()


def test_train_and_predict_from_csv_files(trained: Trained, tmp_path: Path) -> None:
    # the same rows in one CSV block and in one parquet row group train the same model
    train_csv, train_parquet = tmp_path / "train.csv", tmp_path / "train.parquet"
    trained.frame.to_csv(train_csv, index=False)
    trained.frame.to_parquet(train_parquet, row_group_size=len(trained.frame))
    models = []
    for data in (train_csv, train_parquet):
        models.append(tmp_path / f"{data.suffix[1:]}.slm")
        result = run("train", str(data), "--target", "label", "--model", "additive",
                     "--exclude", "id", "--out", str(models[-1]), "--epochs", "2",
                     "--seed", "5", "-p", "n_bases=12", "-p", "embedding=bspline",
                     "-p", "tol=null", "-p", "interactions=0", "--quiet")
        assert result.exit_code == 0, result.output
    model = models[0]
    X = trained.frame[FEATURE_NAMES].astype(np.float32)
    np.testing.assert_allclose(AdditiveSVC.load(model).decision_function(X),
                               AdditiveSVC.load(models[1]).decision_function(X),
                               rtol=1e-6, atol=1e-9)
    test_csv = tmp_path / "test.csv.gz"
    labelled_frame(500, seed=4).to_csv(test_csv, index=False)
    out = tmp_path / "pred.parquet"
    result = run("predict", str(model), str(test_csv), "--out", str(out), "-q")
    assert result.exit_code == 0, result.output
    test = labelled_frame(500, seed=4)
    np.testing.assert_array_equal(
        pd.read_parquet(out)["prediction"],
        AdditiveSVC.load(model).predict(test[FEATURE_NAMES].astype(np.float32)))


def test_predict_feature_mismatch_is_a_clear_error(trained: Trained, tmp_path: Path) -> None:
    data = tmp_path / "fewer.parquet"
    trained.frame.drop(columns=["f7"]).to_parquet(data)
    result = run("predict", str(trained.model), str(data), "-o", str(tmp_path / "p.parquet"))
    assert result.exit_code == 1
    assert "SchemaError: the data lacks features the model was trained on" in result.output
    assert "['f7'] not found" in result.output
    assert not (tmp_path / "p.parquet").exists()


def test_a_numeric_target_on_sparse_rows_trains_a_model_that_takes_them(tmp_path: Path) -> None:
    from sklearn.datasets import dump_svmlight_file

    rng = np.random.default_rng(0)
    X = sp.random(400, 30, density=0.2, random_state=1, format="csr")
    y = X @ rng.normal(size=30) + 0.1 * rng.normal(size=400)
    dump_svmlight_file(X, y, str(tmp_path / "reg.svm"))
    result = run("train", str(tmp_path / "reg.svm"), "-o", str(tmp_path / "m.slm"))
    assert result.exit_code == 0, result.output
    assert "model: supersparse (the default for a regression target on sparse rows" in \
        result.output
    assert type(load_model(tmp_path / "m.slm")).__name__ == "SuperSparseRegressor"


def test_svmlight_data_is_read_with_the_index_base_of_the_training_file(
        tmp_path: Path) -> None:
    from sklearn.datasets import dump_svmlight_file

    rng = np.random.default_rng(3)
    X = rng.uniform(0.5, 2.0, size=(600, 4)) * (rng.random((600, 4)) < 0.7)
    y = (X[:, 0] - X[:, 3] > 0).astype(int)
    dump_svmlight_file(X, y, str(tmp_path / "train.svm"), zero_based=True)
    result = run("train", str(tmp_path / "train.svm"), "-o", str(tmp_path / "m.slm"),
                 "-m", "additive", "-p", "embedding=linear", "--quiet")
    assert result.exit_code == 0, result.output
    model = load_model(tmp_path / "m.slm")
    assert model.svmlight_zero_based_ is True
    # rows to predict where feature 0 is never set: read alone, the file is one-based
    test = X[:50].copy()
    test[:, 0] = 0.0
    dump_svmlight_file(test, y[:50], str(tmp_path / "test.svm"), zero_based=True)
    assert "0:" not in (tmp_path / "test.svm").read_text()
    result = run("predict", str(tmp_path / "m.slm"), str(tmp_path / "test.svm"), "-o",
                 str(tmp_path / "p.parquet"), "--quiet")
    assert result.exit_code == 0, result.output
    np.testing.assert_array_equal(pd.read_parquet(tmp_path / "p.parquet")["prediction"],
                                  model.predict(test))
    # an index beyond the model's features names its line
    (tmp_path / "wide.svm").write_text("1 1:0.5 2:0.3\n0 6:1.0\n")
    result = run("predict", str(tmp_path / "m.slm"), str(tmp_path / "wide.svm"), "-o",
                 str(tmp_path / "w.parquet"), "--quiet")
    assert result.exit_code == 1
    assert "feature index 6 is out of range for n_features=4" in result.output


def test_out_that_is_an_input_is_refused_and_the_input_kept(trained: Trained,
                                                           tmp_path: Path) -> None:
    data = tmp_path / "data.parquet"
    trained.frame.to_parquet(data)
    folder = tmp_path / "parts"
    write_parquet_dir(trained.frame, folder)
    model = tmp_path / "model.slm"
    model.write_bytes(trained.model.read_bytes())
    saved = {p: p.read_bytes() for p in (data, model, *folder.iterdir())}
    attempts = [
        ("train", str(data), "-t", "label", "--exclude", "id", "-o", str(data)),
        ("train", f"file://{folder}", "-t", "label", "--exclude", "id", "-o",
         str(folder / "m.slm")),
        ("predict", str(model), str(data), "-o", str(data)),
        ("predict", str(model), str(data), "-o", str(tmp_path / "." / "model.slm")),
        ("predict", str(model), str(folder), "-o", str(folder / "p.parquet")),
        # explain's pictures in the directory would be read as its files, and break it
        ("explain", str(model), str(folder), "-o", str(folder)),
        ("explain", str(model), str(folder), "-o", str(folder / "report")),
    ]
    for args in attempts:
        result = run(*args, "--quiet")
        assert result.exit_code == 2, (args, result.output)
        assert "would overwrite" in result.output
    assert {p: p.read_bytes() for p in (data, model, *folder.iterdir())} == saved
    # beside the inputs, the same commands write
    result = run("predict", str(model), str(data), "-o", str(tmp_path / "p.parquet"), "--quiet")
    assert result.exit_code == 0, result.output


def test_predict_checks_the_count_of_unnamed_features(tmp_path: Path) -> None:
    X, y = additive_problem(2000, seed=1)
    model_path = AdditiveSVC(n_bases=6, epochs=1, progress=False).fit(X, y).save(
        tmp_path / "unnamed.slm")  # trained on numpy: features x0..x7 taken by position
    data = tmp_path / "seven.parquet"
    pd.DataFrame(X[:, :7], columns=[f"c{j}" for j in range(7)]).to_parquet(data)
    result = run("predict", str(model_path), str(data), "-o", str(tmp_path / "p.parquet"))
    assert result.exit_code == 1
    assert "the data has 7 feature columns" in result.output and "trained on 8" in result.output
    same = tmp_path / "eight.parquet"
    pd.DataFrame(X, columns=[f"c{j}" for j in range(8)]).to_parquet(same)
    ok = run("predict", str(model_path), str(same), "-o", str(tmp_path / "p.parquet"))
    assert ok.exit_code == 0, ok.output
    np.testing.assert_array_equal(pd.read_parquet(tmp_path / "p.parquet")["prediction"],
                                  AdditiveSVC.load(model_path).predict(X))


def test_failed_predict_leaves_the_previous_file(trained: Trained, tmp_path: Path) -> None:
    test = labelled_frame(1000, seed=6)
    test.loc[900, "f2"] = np.nan  # met in the last chunks, after some were written
    data = tmp_path / "nan.parquet"
    test.to_parquet(data)
    out = tmp_path / "pred.parquet"
    out.write_bytes(b"previous")
    result = run("predict", str(trained.model), str(data), "-o", str(out),
                 "--chunk-rows", "200")
    assert result.exit_code == 1 and "MissingValueError" in result.output
    assert "'f2'" in result.output
    assert out.read_bytes() == b"previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nan.parquet", "pred.parquet"]
    dropped = run("predict", str(trained.model), str(data), "-o", str(out), "--row-index",
                  "--nan-policy", "drop", "-q")
    assert dropped.exit_code == 0, dropped.output
    rows = pd.read_parquet(out)["row"].to_numpy()
    np.testing.assert_array_equal(rows, np.delete(np.arange(1000), 900))
    assert "no longer line up" not in dropped.stderr
    # without a row index the shorter output says so
    bare = run("predict", str(trained.model), str(data), "-o", str(out), "--nan-policy",
               "drop", "-q")
    assert bare.exit_code == 0 and len(pd.read_parquet(out)) == 999
    assert "1 of the 1,000 rows were dropped" in bare.stderr and "--row-index" in bare.stderr


def test_predictions_through_a_symbolic_link_replace_the_file_it_names(
        trained: Trained, tmp_path: Path) -> None:
    (tmp_path / "real.csv").write_text("previous\n")
    link = tmp_path / "lnk.csv"
    link.symlink_to("real.csv")
    result = run("predict", str(trained.model), str(trained.data), "-o", str(link), "-q")
    assert result.exit_code == 0, result.output
    assert link.is_symlink() and len(pd.read_csv(tmp_path / "real.csv")) == 3000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lnk.csv", "real.csv"]


def test_predictions_replacing_a_file_keep_its_permissions(trained: Trained,
                                                          tmp_path: Path) -> None:
    out = tmp_path / "priv.csv"
    out.write_text("previous\n")
    out.chmod(0o600)
    result = run("predict", str(trained.model), str(trained.data), "-o", str(out), "-q")
    assert result.exit_code == 0, result.output
    assert len(pd.read_csv(out)) == 3000 and out.stat().st_mode & 0o777 == 0o600


def read_fifo_in_background(fifo: Path) -> tuple[Any, list[bytes]]:
    """Make ``fifo`` and start a thread that reads it whole into the returned list."""
    import os
    import threading

    os.mkfifo(fifo)
    received: list[bytes] = []

    def read() -> None:
        with open(fifo, "rb") as fh:
            received.append(fh.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return reader, received


@pytest.mark.parametrize("name", ["p.csv", "p.parquet"])
def test_predictions_to_a_fifo_are_written_through_it(trained: Trained, tmp_path: Path,
                                                      name: str) -> None:
    fifo = tmp_path / name
    reader, received = read_fifo_in_background(fifo)
    result = run("predict", str(trained.model), str(trained.data), "-o", str(fifo), "-q")
    reader.join(timeout=60)
    assert result.exit_code == 0, result.output
    assert fifo.is_fifo() and [p.name for p in tmp_path.iterdir()] == [name]
    copy = tmp_path / f"copy.{name}"
    copy.write_bytes(received[0])
    read_back = pd.read_csv(copy) if name.endswith(".csv") else pd.read_parquet(copy)
    assert len(read_back) == 3000


def test_a_model_trained_into_a_fifo_goes_through_it(trained: Trained, tmp_path: Path) -> None:
    fifo = tmp_path / "model.slm"
    reader, received = read_fifo_in_background(fifo)
    result = run("train", str(trained.data), "--target", "label", "--model", "additive",
                 "--exclude", "id", "--out", str(fifo), "--epochs", "1", "-p",
                 "interactions=0", "--quiet")
    reader.join(timeout=60)
    assert result.exit_code == 0, result.output
    assert fifo.is_fifo() and [p.name for p in tmp_path.iterdir()] == ["model.slm"]
    (tmp_path / "copy.slm").write_bytes(received[0])
    assert AdditiveSVC.load(tmp_path / "copy.slm").epochs == 1


def test_an_out_that_is_a_socket_is_refused_before_the_data_is_read(
        trained: Trained, tmp_path: Path) -> None:
    import socket

    out = tmp_path / "s.csv"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(out))
        result = run("predict", str(trained.model), str(tmp_path / "missing.parquet"), "-o",
                     str(out))
        assert result.exit_code == 2 and f"{out} is a socket" in result.output
        assert out.is_socket()


@pytest.mark.parametrize("name", ["p.parquet", "p.csv.gz"])
def test_a_disk_that_fills_while_predicting_is_one_line(
        trained: Trained, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    from streamlearn import cli as cli_module

    write = cli_module._TableFile.write
    calls: list[int] = []

    def filling(self: Any, table: Any) -> None:
        calls.append(table.num_rows)
        if len(calls) == 3:  # two chunks written, then the disk is full
            raise OSError(28, "No space left on device")
        write(self, table)

    monkeypatch.setattr(cli_module._TableFile, "write", filling)
    out = tmp_path / name
    result = run("predict", str(trained.model), str(trained.data), "-o", str(out),
                 "--chunk-rows", "500", "-q")
    assert result.exit_code == 1
    assert result.output == (f"Error: could not write the predictions to {out}: "
                             "[Errno 28] No space left on device\n")
    assert "Traceback" not in result.output and calls == [500, 500, 500]
    assert list(tmp_path.iterdir()) == []  # no partial file, no temporary one


def test_an_out_in_a_directory_that_refuses_files_is_one_line(
        trained: Trained, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise PermissionError(13, "Permission denied", kwargs.get("dir"))

    monkeypatch.setattr(tempfile, "mkstemp", refused)
    out = tmp_path / "p.csv"
    result = run("predict", str(trained.model), str(trained.data), "-o", str(out), "-q")
    assert result.exit_code == 1
    assert result.output.startswith(f"Error: could not write the predictions to {out}: "
                                    "[Errno 13] Permission denied")
    assert result.output.count("\n") == 1 and not out.exists()


@pytest.mark.parametrize("suffix", ["parquet", "csv"])
def test_kept_columns_are_copied_with_their_missing_values(trained: Trained, tmp_path: Path,
                                                          suffix: str) -> None:
    test = labelled_frame(300, seed=11)
    ids = [None if i % 5 == 0 else f"r{i}" for i in range(300)]
    counts = [None if i % 7 == 0 else i for i in range(300)]
    test["id"], test["n"] = ids, pd.array(counts, dtype="Int64")
    data = tmp_path / f"test.{suffix}"
    test.to_parquet(data) if suffix == "parquet" else test.to_csv(data, index=False)
    out = tmp_path / "p.parquet"
    result = run("predict", str(trained.model), str(data), "-o", str(out), "--keep", "id",
                 "--keep", "n", "-q")
    assert result.exit_code == 0, result.output
    written = pq.read_table(out)
    assert written.column("id").to_pylist() == ids
    n = written.column("n").to_pandas()  # CSV has no integer nulls: NaN in a float column
    missing = [v is None for v in counts]
    np.testing.assert_array_equal(n.isna(), missing)
    np.testing.assert_array_equal(n[~np.array(missing)], [v for v in counts if v is not None])


def test_predict_usage_and_model_file_errors(trained: Trained, tmp_path: Path) -> None:
    out = str(tmp_path / "p.parquet")
    assert run("predict", str(trained.model), str(trained.data)).exit_code == 2  # no --out
    clash = run("predict", str(trained.model), str(trained.data), "-o", out, "--keep",
                "prediction")
    assert clash.exit_code == 2 and "clash" in clash.output
    unknown = run("predict", str(trained.model), str(trained.data), "-o", out, "--keep", "nope")
    assert unknown.exit_code == 1 and "--keep names column(s) ['nope']" in unknown.output
    broken = tmp_path / "broken.slm"
    broken.write_bytes(trained.model.read_bytes()[:200])
    damaged = run("predict", str(broken), str(trained.data), "-o", out)
    assert damaged.exit_code == 1 and "ModelFileError" in damaged.output
    assert "truncated" in damaged.output


# -- evaluate -----------------------------------------------------------------------------
def test_evaluate_json_matches_scikit_learn(trained: Trained, tmp_path: Path) -> None:
    test = labelled_frame(1200, seed=7)
    data = tmp_path / "test.parquet"
    test.to_parquet(data, row_group_size=500)
    result = run("evaluate", str(trained.model), str(data), "--target", "label", "--json", "-q")
    assert result.exit_code == 0, result.output
    metrics = json.loads(result.stdout)
    model = AdditiveSVC.load(trained.model)
    X, y = test[FEATURE_NAMES].astype(np.float32), test["label"].to_numpy()
    predicted = model.predict(X)
    assert metrics["n_rows"] == 1200 and metrics["classes"] == ["no", "yes"]
    assert metrics["accuracy"] == pytest.approx(np.mean(predicted == y), abs=1e-12)
    assert metrics["log_loss"] == pytest.approx(
        log_loss(y, model.predict_proba(X), labels=["no", "yes"]), rel=1e-9)
    assert metrics["confusion_matrix"] == confusion_matrix(y, predicted,
                                                           labels=["no", "yes"]).tolist()
    table = run("evaluate", str(trained.model), str(data), "-t", "label", "-q")
    assert table.exit_code == 0
    assert f"accuracy  {metrics['accuracy']:.4f}" in table.output
    assert "confusion matrix (rows: true class" in table.output


def test_evaluate_names_labels_the_model_never_saw(trained: Trained, tmp_path: Path) -> None:
    test = labelled_frame(400, seed=8)
    test.loc[:29, "label"] = "maybe"
    data = tmp_path / "test.parquet"
    test.to_parquet(data)
    result = run("evaluate", str(trained.model), str(data), "-t", "label", "--json", "-q")
    assert result.exit_code == 0, result.output
    metrics = json.loads(result.stdout)
    assert metrics["unseen_classes"] == {"maybe": 30}
    assert "not trained on, counted as errors: 'maybe' (30)" in result.stderr
    model = AdditiveSVC.load(trained.model)
    predicted = model.predict(test[FEATURE_NAMES].astype(np.float32))
    assert metrics["accuracy"] == pytest.approx(np.mean(predicted == test["label"]))
    assert "unseen_classes" not in json.loads(
        run("evaluate", str(trained.model), str(trained.data), "-t", "label", "--json",
            "-q").stdout)


@pytest.mark.parametrize("labels", [("yes",), ("yes", "maybe")], ids=["one", "new"])
def test_evaluate_labels_the_matrix_with_the_model_and_data_classes(
        trained: Trained, tmp_path: Path, labels: tuple[str, ...]) -> None:
    test = labelled_frame(400, seed=9)
    test = test[test["label"] == "yes"].reset_index(drop=True)  # "no" is missing
    test.loc[::7, "label"] = labels[-1]
    data = tmp_path / "test.parquet"
    test.to_parquet(data)
    union = sorted({"no", "yes", *labels})
    result = run("evaluate", str(trained.model), str(data), "-t", "label", "--json", "-q")
    assert result.exit_code == 0, result.output
    metrics = json.loads(result.stdout)
    predicted = AdditiveSVC.load(trained.model).predict(
        test[FEATURE_NAMES].astype(np.float32))
    assert metrics["classes"] == union
    assert metrics["confusion_matrix"] == confusion_matrix(test["label"], predicted,
                                                           labels=union).tolist()
    table = run("evaluate", str(trained.model), str(data), "-t", "label", "-q")
    assert table.exit_code == 0, table.output
    rows = table.output.split("columns: predicted)")[1].strip().splitlines()
    assert rows[0].split() == union and [r.split()[0] for r in rows[1:]] == union


def test_evaluate_refuses_labels_of_another_kind_than_the_model_classes(
        trained: Trained, tmp_path: Path) -> None:
    test = labelled_frame(200, seed=9)
    test["label"] = np.where(test["label"] == "yes", 1, 0)
    data = tmp_path / "test.parquet"
    test.to_parquet(data)
    result = run("evaluate", str(trained.model), str(data), "-t", "label", "-q")
    assert result.exit_code == 1
    assert "classes are text (['no', 'yes']) but target 'label' holds numbers" in result.output


def test_data_of_one_class_is_described_converted_and_scored(trained: Trained,
                                                              tmp_path: Path) -> None:
    test = labelled_frame(400, seed=9)
    test = test[test["label"] == "yes"]
    data = tmp_path / "yes.parquet"
    test.to_parquet(data)
    store = tmp_path / "yes.zarr"
    assert run("info", str(data), "-t", "label", "--exclude", "id", "-q").exit_code == 0
    converted = run("convert", str(data), "-t", "label", "--exclude", "id", "-o", str(store),
                    "-q")
    assert converted.exit_code == 0, converted.output
    info = run("info", str(store), "-q")
    assert info.exit_code == 0, info.output
    assert f"target: 1 class, rows per class {{'yes': {len(test)}}}" in info.output
    scored = json.loads(run("evaluate", str(trained.model), str(store), "--json",
                            "-q").stdout)
    predicted = AdditiveSVC.load(trained.model).predict(
        test[FEATURE_NAMES].astype(np.float32))
    assert scored["accuracy"] == pytest.approx(np.mean(predicted == "yes"))
    trained_on_it = run("train", str(store), "-o", str(tmp_path / "m.slm"), "-q")
    assert trained_on_it.exit_code == 1 and "1 class" in trained_on_it.output


def test_evaluate_names_a_missing_target_as_the_target(trained: Trained) -> None:
    result = run("evaluate", str(trained.model), str(trained.data), "--target", "nope")
    assert result.exit_code == 1
    assert "target column 'nope' not found" in result.output
    assert "lacks features" not in result.output


def test_evaluate_without_target_is_a_usage_error(trained: Trained) -> None:
    result = run("evaluate", str(trained.model), str(trained.data))
    assert result.exit_code == 2 and "--target" in result.output


def test_metrics_table_layout() -> None:
    text = metrics_table({"n_rows": 1234, "accuracy": 0.5, "log_loss": float("nan"),
                          "confusion_matrix": [[1, 20], [300, 4]]}, ["a", "bb"])
    lines = text.splitlines()
    assert lines[:3] == ["n_rows    1,234", "accuracy  0.5000", "log_loss  nan"]
    assert lines[-3:] == ["       a  bb", "  a    1  20", " bb  300   4"]


# -- demo and helpers ---------------------------------------------------------------------
def test_demo_trains_and_reports_held_out_accuracy(tmp_path: Path) -> None:
    import warnings

    with warnings.catch_warnings():
        # the demo's own predictions (held-out rows, the curves' grid) are the library's
        warnings.filterwarnings("error", message="X does not have valid feature names")
        result = run("demo", "--rows", "20000", "--epochs", "1", "--quiet",
                     STREAMLEARN_CACHE=str(tmp_path))
    assert result.exit_code == 0, result.output
    assert "rows     : 20,000" in result.output
    model = AdditiveSVC.load(tmp_path / "demo-additive-20000.slm")
    test = pd.read_parquet(tmp_path / "demo-additive-10000-1.parquet")
    X = test[[f"x{j}" for j in range(8)]].astype(np.float32)
    accuracy = np.mean(model.predict(X) == test["label"].to_numpy())
    assert f"additive (B-splines)     {accuracy:.4f}" in result.output
    assert accuracy > 0.85
    assert f"model saved to {tmp_path / 'demo-additive-20000.slm'}" in result.output
    noise = [line for line in result.output.splitlines() if line.startswith(("  x6", "  x7"))]
    assert len(noise) == 2


def test_demo_defaults_stop_by_the_rule_without_a_warning(tmp_path: Path) -> None:
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        result = run("demo", "--rows", "20000", "--quiet", STREAMLEARN_CACHE=str(tmp_path))
    assert result.exit_code == 0, result.output
    model = AdditiveSVC.load(tmp_path / "demo-additive-20000.slm")
    assert 1 < model.n_iter_ < model.epochs_
    assert f"  {model.n_iter_} epochs (its stopping rule met)" in result.output
    # the counts of bases tried, each with the held-out loss the model file kept
    steps = ", ".join(f"{n}: {loss:.4f}" for n, loss in model.bases_tried_)
    linear = model.linear_check_
    assert not linear["kept"]
    assert (f"bases per feature: {model.n_bases_} kept (held-out log-loss by count: {steps}; "
            f"the linear model not kept ({linear['linear']:.4f}))") in result.output


def test_additive_curves_recover_each_term() -> None:
    class Additive:
        def term_contributions(self, X: np.ndarray) -> np.ndarray:
            X = X.astype(np.float64)
            pair = X[:, 0] * X[:, 1]  # a pair term follows the features' terms
            return np.stack([np.sin(X[:, 0]) - 3.0, X[:, 1] ** 2, 0.0 * X[:, 2], pair],
                            axis=1)[:, :, None]

    lo, hi = np.array([-2.0, -1.0, 0.0]), np.array([2.0, 1.0, 5.0])
    curves = additive_curves(Additive(), lo, hi, points=9)
    assert curves.shape == (3, 9)  # the features' curves only
    g0 = np.sin(np.linspace(-2, 2, 9))
    g1 = np.linspace(-1, 1, 9) ** 2
    np.testing.assert_allclose(curves[0], g0 - g0.mean(), atol=1e-6)
    np.testing.assert_allclose(curves[1], g1 - g1.mean(), atol=1e-6)
    np.testing.assert_allclose(curves[2], 0.0, atol=1e-6)


def test_sparkline_levels() -> None:
    assert sparkline(np.array([0.0, 1.0, 0.5, 7.0]), 0.0, 7.0) == "▁▂▁█"
    assert sparkline(np.array([3.0, 3.0]), 3.0, 3.0) == "▁▁"


# -- info and general ---------------------------------------------------------------------
def test_info_prints_schema_and_statistics(ref: Reference, tmp_path: Path) -> None:
    root = write_parquet_dir(ref.frame, tmp_path / "d")
    result = run("info", str(root), "--target", "label", "--exclude", "w", "--quiet")
    assert result.exit_code == 0, result.output
    assert "rows     : 1,000" in result.output
    assert "classes  : 3 (3, 5, 7)" in result.output
    assert "label (classification)" in result.output
    mean_a = f"{ref.frame['a'].mean():.4g}"
    assert mean_a[:5] in result.output


def test_data_problems_exit_1_with_one_line(tmp_path: Path) -> None:
    result = run("info", str(tmp_path / "missing.parquet"))
    assert result.exit_code == 1
    assert "SourceError: no such file or directory" in result.output
    assert "Traceback" not in result.output


def test_usage_errors_exit_2(ref: Reference, tmp_path: Path) -> None:
    root = write_parquet_dir(ref.frame, tmp_path / "d")
    assert run("info").exit_code == 2
    assert run("info", str(root), "--nan-policy", "maybe").exit_code == 2
    assert run("frobnicate").exit_code == 2


def test_help_has_examples() -> None:
    for command in ("info", "demo", "train", "predict", "evaluate"):
        result = run(command, "--help")
        assert result.exit_code == 0 and "Examples:" in result.output, command
    train_help = run("train", "--help").output
    for name in MODELS:
        assert name in train_help
    assert "Examples:" in run("--help").output


def test_fit_is_another_name_for_train() -> None:
    """scikit-learn's word for training runs ``train``; the help lists ``train`` only."""
    fit, train = run("fit", "--help"), run("train", "--help")
    assert fit.exit_code == 0 and fit.output.startswith("Usage: cli fit ")
    # the same command: the same text after the usage line, which names the word typed
    assert fit.output.split("\n", 1)[1] == train.output.split("\n", 1)[1]
    commands = run("--help").output.split("Commands:")[1]
    assert "train" in commands and "fit" not in commands.split()


def test_console_script_exit_code(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "streamlearn.cli", "info", str(tmp_path / "nope")],
        capture_output=True, text=True, check=False,
    )
    assert proc.returncode == 1
    assert "Error: SourceError" in proc.stderr


def test_a_reader_that_closes_the_pipe_stops_the_command_quietly(tmp_path: Path) -> None:
    """``streamlearn info wide.parquet | head -1``: once the reader has gone (the report of
    3,000 columns outgrows the pipe's buffer), the command stops with exit code 1 and says
    nothing (no BrokenPipeError line)."""
    frame = pd.DataFrame(np.random.default_rng(0).normal(size=(50, 3000)),
                         columns=[f"c{i}" for i in range(3000)])
    frame.to_parquet(tmp_path / "wide.parquet")
    info = subprocess.Popen(
        [sys.executable, "-m", "streamlearn.cli", "info", str(tmp_path / "wide.parquet")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert info.stdout is not None
    first = info.stdout.readline()
    info.stdout.close()  # the reader goes away after one line
    _, err = info.communicate(timeout=120)
    assert first.startswith(b"source") and info.returncode == 1
    assert err.decode() == ""


def test_console_script_prints_warnings_as_one_line_without_source(trained: Trained,
                                                                    tmp_path: Path) -> None:
    """A warning of the library reaches the command's user as ``warning: Kind: text``,
    not as Python's two lines naming the library's file and the statement there."""
    proc = subprocess.run(
        [sys.executable, "-m", "streamlearn.cli", "train", str(trained.data), "-t", "label",
         "--exclude", "id", "--epochs", "1", "-p", "interactions=0", "-q",
         "-o", str(tmp_path / "m.slm")],
        capture_output=True, text=True, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "warning: ConvergenceWarning: PEGASOS stopped after epochs=1" in proc.stderr
    assert ".py:" not in proc.stderr


def test_categorical_columns_round_trip_through_train_and_predict(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    cities = np.array(["Lima", "Oslo", "Rome"])

    def frame(n: int, city: np.ndarray) -> pd.DataFrame:
        x = rng.normal(size=n)
        return pd.DataFrame({"x": x, "city": city,
                             "label": np.where((city == "Oslo") ^ (x > 1), "yes", "no")})

    train = frame(2000, rng.choice(cities, 2000))
    train.to_parquet(tmp_path / "train.parquet")
    model_path = tmp_path / "m.slm"
    result = run("train", str(tmp_path / "train.parquet"), "-t", "label", "-m", "additive",
                 "-o", str(model_path), "--epochs", "3", "-q")
    assert result.exit_code == 0, result.output
    # new data without one of the cities: coded by the model's categories, not its own
    test = frame(500, rng.choice(cities[1:], 500))
    test.to_parquet(tmp_path / "test.parquet")
    out = tmp_path / "pred.parquet"
    result = run("predict", str(model_path), str(tmp_path / "test.parquet"), "--out", str(out),
                 "-q")
    assert result.exit_code == 0, result.output
    model = AdditiveSVC.load(model_path)
    assert model.categories_ == {"city": ("Lima", "Oslo", "Rome")}
    np.testing.assert_array_equal(pd.read_parquet(out)["prediction"],
                                  model.predict(test[["x", "city"]]))
    # the city carries most of the label: far above the best rule that ignores it
    without_city = max(np.mean(test["label"] == "yes"), np.mean(test["label"] == "no"))
    assert np.mean(model.predict(test[["x", "city"]]) == test["label"]) > without_city + 0.25
    assert "not seen in fit" not in result.stderr
    # a city the model never saw is scored, and said so
    test.loc[[3, 40], "city"] = "Kyiv"
    test.to_parquet(tmp_path / "new.parquet")
    result = run("predict", str(model_path), str(tmp_path / "new.parquet"), "--out",
                 str(out), "-q")
    assert result.exit_code == 0, result.output
    assert ("warning: feature 'city' holds 2 value(s) not seen in fit (first at row 3)"
            in result.stderr)
    with pytest.warns(UserWarning, match="not seen in fit"):
        expected = model.predict(test[["x", "city"]])
    np.testing.assert_array_equal(pd.read_parquet(out)["prediction"], expected)


def test_predict_says_what_an_indicator_model_does_with_an_unseen_category(
        tmp_path: Path) -> None:
    rng = np.random.default_rng(9)
    n = 800
    frame = pd.DataFrame({"x": rng.normal(size=n),
                          "b": rng.choice(["no", "yes"], n, p=[0.6, 0.4]),
                          "c": rng.choice(["p", "q", "r", "s"], n)})
    frame["label"] = ((frame["x"] > 0) ^ (frame["c"] == "q")).astype(int)
    frame.to_parquet(tmp_path / "train.parquet")
    model_path = tmp_path / "m.slm"
    result = run("train", str(tmp_path / "train.parquet"), "-t", "label", "-m", "mixture",
                 "-o", str(model_path), "-q")
    assert result.exit_code == 0, result.output
    frame.head(5).assign(b=["no", "maybe", "yes", "no", "maybe"],
                         c=["p", "q", "t", "r", "s"]).to_parquet(tmp_path / "new.parquet")
    result = run("predict", str(model_path), str(tmp_path / "new.parquet"), "--out",
                 str(tmp_path / "pred.parquet"), "-q")
    assert result.exit_code == 0, result.output
    mean = np.mean(frame["b"] == "yes")
    assert (f"feature 'b' holds 2 value(s) not seen in fit (first at row 1); they are read "
            f"as {mean:.4g}, the column's training mean" in result.stderr)
    assert ("feature 'c' holds 1 value(s) not seen in fit (first at row 2); they set none "
            "of its indicator columns" in result.stderr)
    assert "one past" not in result.stderr
    model = load_model(model_path)
    with pytest.warns(UserWarning, match="not seen in fit"):
        expected = model.predict(pd.read_parquet(tmp_path / "new.parquet")[["x", "b", "c"]])
    np.testing.assert_array_equal(pd.read_parquet(tmp_path / "pred.parquet")["prediction"],
                                  expected)
    result = run("evaluate", str(model_path), str(tmp_path / "new.parquet"), "-t", "label")
    assert result.exit_code == 0, result.output
    assert ("feature 'c' holds 1 value(s) not seen in fit; they set none of its indicator "
            "columns" in result.stderr)


def test_train_says_which_multiclass_scheme_the_default_kept(tmp_path: Path) -> None:
    # 5 bands of a noisy linear score: the default keeps one-vs-one
    rng = np.random.default_rng(5)
    X = rng.normal(size=(3000, 4))
    score = X @ rng.normal(size=4) + 0.5 * rng.normal(size=3000)
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(4)])
    frame["label"] = np.digitize(score, np.quantile(score, [0.2, 0.4, 0.6, 0.8]))
    data, path = tmp_path / "train.parquet", tmp_path / "m.slm"
    frame.to_parquet(data)
    result = run("train", str(data), "-t", "label", "-o", str(path), "-q", "--no-train-score",
                 "-p", "n_bases=8", "-p", "interactions=0", "-p", "value_terms=False")
    assert result.exit_code == 0, result.output
    model = load_model(path)
    check = model.multiclass_check_
    assert model.multiclass_ == check["kept"] == "ovo" and model.n_models_ == 10
    assert check["ovo"] < check["ovr"]
    assert (f"  scheme   : one-vs-one kept (held-out log-loss {check['ovr']:.4f} one-vs-rest, "
            f"{check['ovo']:.4f} one-vs-one)") in result.output.splitlines()
    # predict streams the file's rows through the pairwise models as the loaded model does
    predicted = run("predict", str(path), str(data), "-o", str(tmp_path / "p.parquet"),
                    "--proba", "-q")
    assert predicted.exit_code == 0, predicted.output
    out = pd.read_parquet(tmp_path / "p.parquet")
    features = frame.drop(columns="label")
    np.testing.assert_array_equal(out["prediction"], model.predict(features))
    np.testing.assert_allclose(out[[f"proba_{k}" for k in range(5)]].to_numpy(),
                               model.predict_proba(features), rtol=1e-6)
    # a model that compared no schemes has no such line; one too short of held-out rows
    # says why one-vs-one was not tried
    assert multiclass_line(AdditiveSVC()) is None
    reason = "150 held-out rows, fewer than 200 to compare one-vs-one on"
    short = AdditiveSVC()
    short.multiclass_check_ = {"kept": "ovr", "ovr": 0.9, "ovo": None, "reason": reason}
    assert multiclass_line(short) == (f"multiclass: one-vs-rest kept, one-vs-one not tried "
                                      f"({reason})")


def test_train_and_explain_a_default_model_that_kept_the_linear_candidate(
        tmp_path: Path) -> None:
    rng = np.random.default_rng(11)
    X = rng.normal(size=(3000, 60)).astype(np.float32)
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(60)])
    frame["label"] = (X @ rng.normal(size=60) + rng.normal(0, 4.0, 3000) > 0).astype(int)
    data, model = tmp_path / "train.parquet", tmp_path / "m.slm"
    frame.to_parquet(data)
    result = run("train", str(data), "-t", "label", "-o", str(model), "-q")
    assert result.exit_code == 0, result.output
    fitted = load_model(model)
    assert fitted.linear_check_["kept"]
    assert (f"bases    : none, the linear model kept (held-out log-loss "
            f"{fitted.linear_check_['linear']:.4f}") in result.output
    out = tmp_path / "explained"
    shown = run("explain", str(model), str(data), "-o", str(out))
    assert shown.exit_code == 0, shown.output
    assert (out / "shape_functions.png").exists() and (out / "index.html").exists()


def test_a_model_file_given_as_data_is_named_as_one(trained: Trained) -> None:
    for command in (("info", str(trained.model)),
                    ("convert", str(trained.model), "-o", str(trained.model) + ".zarr")):
        result = run(*command)
        assert result.exit_code == 1
        assert "is a streamlearn model file, not data" in result.output


def test_explain_s_row_sample_keeps_its_rows_not_the_chunks_they_came_from(
        tmp_path: Path) -> None:
    # a strided view of each chunk would keep every chunk read alive until the end of the
    # pass: a peak that grows with the rows of DATA instead of the chunk size
    import tracemalloc

    from streamlearn.cli import row_sample
    from streamlearn.data import open_dataset

    rng = np.random.default_rng(3)
    frame = pd.DataFrame(rng.normal(size=(160_000, 8)).astype(np.float32),
                         columns=[f"f{j}" for j in range(8)])
    frame.to_parquet(tmp_path / "d.parquet", row_group_size=1000)
    dataset = open_dataset(tmp_path / "d.parquet", chunk_rows=1000)
    row_sample(dataset, n=400)  # imports and first-use allocations out of the measure
    tracemalloc.start()
    try:
        sample = row_sample(dataset, n=400)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    np.testing.assert_array_equal(sample, frame.to_numpy()[::400])
    # the rows' 5.1 MB against a few chunks of 32 KB (a peak of about 175 KB alone); the
    # bound leaves room for what other threads of a test worker may allocate meanwhile
    # (tracemalloc counts them all: on 40,000 rows one whole-suite run under load measured
    # 358 KB where the test alone measures 156 KB)
    assert peak < frame.to_numpy().nbytes / 8, peak


def test_pairs_line_says_when_the_linear_model_replaced_the_kept_pairs():
    from types import SimpleNamespace

    check = {"screened": [("a", "b"), ("a", "c")], "kept": True,
             "held_out_log_loss_without": 0.5, "held_out_log_loss_with": 0.4}
    curves = SimpleNamespace(interaction_check_=check, pair_bases_=6,
                             interactions_=[("a", "b")],
                             linear_check_={"kept": False, "linear": 0.6, "curves": 0.4})
    line = pairs_line(curves)
    assert "kept on 6 x 6 grids (" in line and line.endswith("; best: a x b")
    # the linear model, kept after the pairs were, has no pairs: the line must not say kept
    linear = SimpleNamespace(interaction_check_=check, pair_bases_=None, interactions_=[],
                             linear_check_={"kept": True, "linear": 0.3, "curves": 0.4})
    line = pairs_line(linear)
    assert "dropped with the curves for the linear model" in line and "best:" not in line
