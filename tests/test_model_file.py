"""Model files round-trip, and every kind of damage is reported as what it is."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import BaseEstimator

from streamlearn.errors import ModelFileError
from streamlearn.io import load_model, read_model_file, save_model


class Toy(BaseEstimator):
    def __init__(self, alpha: float = 1.0) -> None:
        self.alpha = alpha


REGISTRY = {"Toy": Toy}


def _toy() -> Toy:
    model = Toy(alpha=0.25)
    model.coef_ = np.arange(12, dtype=np.float32).reshape(3, 4)
    model.classes_ = np.array(["ham", "spam", "eggs"])
    return model


def test_round_trip(tmp_path: Path) -> None:
    path = save_model(_toy(), tmp_path / "m.slm")
    loaded = load_model(path, classes=REGISTRY)
    assert loaded.alpha == 0.25
    np.testing.assert_array_equal(loaded.coef_, _toy().coef_)
    assert loaded.coef_.dtype == np.float32
    np.testing.assert_array_equal(loaded.classes_, ["ham", "spam", "eggs"])
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    # the renamed file has the permissions of any new file, not mkstemp's owner-only ones
    (tmp_path / "plain").write_bytes(b"")
    assert path.stat().st_mode & 0o777 == (tmp_path / "plain").stat().st_mode & 0o777


def test_truncated_file(tmp_path: Path) -> None:
    path = save_model(_toy(), tmp_path / "m.slm")
    path.write_bytes(path.read_bytes()[:-60])
    with pytest.raises(ModelFileError, match="truncated"):
        load_model(path, classes=REGISTRY)


def test_tampered_array(tmp_path: Path) -> None:
    path = save_model(_toy(), tmp_path / "m.slm")
    header, arrays = read_model_file(path)
    arrays["coef_"][0, 0] = 99.0
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("metadata.json", json.dumps(header))
        for name, a in arrays.items():
            with zf.open(f"arrays/{name}.npy", "w") as fh:
                np.lib.format.write_array(fh, a)
    with pytest.raises(ModelFileError, match="'coef_' does not match its checksum"):
        load_model(path, classes=REGISTRY)


def test_wrong_version_and_wrong_class(tmp_path: Path) -> None:
    path = save_model(_toy(), tmp_path / "m.slm")
    header, _ = read_model_file(path)
    newer = dict(header, format_version=99)
    other = tmp_path / "new.slm"
    with zipfile.ZipFile(other, "w") as zf:
        zf.writestr("metadata.json", json.dumps(newer))
    with pytest.raises(ModelFileError, match="format version 99; this streamlearn"):
        load_model(other, classes=REGISTRY)
    with pytest.raises(ModelFileError, match="holds a 'Toy', which is not a streamlearn model"):
        load_model(path, classes={})
    with pytest.raises(ModelFileError,
                       match="holds a model of class Toy, not int: load it with Toy.load"):
        load_model(path, classes=REGISTRY, expected=int)


def test_not_a_model_file(tmp_path: Path) -> None:
    junk = tmp_path / "junk.slm"
    junk.write_text("hello")
    with pytest.raises(ModelFileError, match="truncated or not a streamlearn model file"):
        load_model(junk, classes=REGISTRY)
    with pytest.raises(ModelFileError, match="no model file"):
        load_model(tmp_path / "absent.slm", classes=REGISTRY)


def test_object_arrays_are_refused(tmp_path: Path) -> None:
    model = _toy()
    model.classes_ = np.array(["a", 1], dtype=object)
    with pytest.raises(ModelFileError, match="cannot be saved without pickle"):
        save_model(model, tmp_path / "m.slm")
    assert not (tmp_path / "m.slm").exists()


def test_failed_write_keeps_the_previous_file(tmp_path: Path) -> None:
    path = save_model(_toy(), tmp_path / "m.slm")
    before = path.read_bytes()
    model = _toy()
    model.coef_ = np.array([{"x": 1}], dtype=object)
    with pytest.raises(ModelFileError):
        save_model(model, path)
    assert path.read_bytes() == before


def test_a_file_written_before_a_rename_loads_under_the_new_name(tmp_path: Path) -> None:
    from streamlearn.models import SuperSparseClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3)).astype(np.float32)
    model = SuperSparseClassifier(n_prototypes=4, max_iter=3).fit(X, X[:, 0] > 0)
    path = save_model(model, tmp_path / "m.slm")
    header, arrays = read_model_file(path)
    # the file as the release that called the prototypes' weights coef_ wrote it
    learned = header["metadata"]["learned"]
    learned["coef_"] = {"$array": "coef_"}
    del learned["dual_coef_"]
    arrays["coef_"] = arrays.pop("dual_coef_")
    header["arrays"]["coef_"] = header["arrays"].pop("dual_coef_")
    old = tmp_path / "old.slm"
    with zipfile.ZipFile(old, "w") as zf:
        zf.writestr("metadata.json", json.dumps(header))
        for name, a in arrays.items():
            with zf.open(f"arrays/{name}.npy", "w") as fh:
                np.lib.format.write_array(fh, a)
    loaded = load_model(old)
    np.testing.assert_array_equal(loaded.dual_coef_, model.dual_coef_)
    assert "coef_" not in vars(loaded)
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))


def _rewritten(path: Path, out: Path, edit) -> Path:
    header, arrays = read_model_file(path)
    edit(header)
    with zipfile.ZipFile(out, "w") as zf:
        zf.writestr("metadata.json", json.dumps(header))
        for name, a in arrays.items():
            with zf.open(f"arrays/{name}.npy", "w") as fh:
                np.lib.format.write_array(fh, a)
    return out


def test_damaged_metadata_and_bad_parameters_are_model_file_errors(tmp_path: Path) -> None:
    from streamlearn.models import SuperSparseClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3)).astype(np.float32)
    model = SuperSparseClassifier(n_prototypes=4, max_iter=3).fit(X, X[:, 0] > 0)
    path = save_model(model, tmp_path / "m.slm")

    def listed_as_a_list(header):
        header["arrays"] = []

    def bad_parameter(header):
        header["metadata"]["params"]["n_prototypes"] = "many"

    with pytest.raises(ModelFileError, match="list of arrays"):
        read_model_file(_rewritten(path, tmp_path / "a.slm", listed_as_a_list))
    with pytest.raises(ModelFileError, match="n_prototypes"):
        load_model(_rewritten(path, tmp_path / "b.slm", bad_parameter))


#: ShareBoost's family of the most state (centres, radii, the metric), for a fixed number
#: of rounds: no folds of the 600 rows comparing three families.
QUICK = {"ShareBoostClassifier": {"features": "anchors", "n_rounds": 8}}


@pytest.mark.parametrize("name", ["MixtureSVC", "ShareBoostClassifier",
                                  "SuperSparseClassifier"])
def test_a_model_trained_on_category_codes_loads_and_reads_codes(
        tmp_path: Path, monkeypatch, name: str) -> None:
    # files written before categorical columns were read as indicator columns hold a
    # model of the codes (categories_, no category_indicators_): it predicts as it did
    import streamlearn.models as models
    from tests.category_problem import category_problem

    cls = getattr(models, name)
    frame, score = category_problem(600, 0, k=8)
    with monkeypatch.context() as patch:
        patch.setattr(cls, "_category_indicators", False)  # how the earlier release read
        with pytest.warns(UserWarning, match="'cat' \\(8 categories\\) as one number"):
            old = cls(**QUICK.get(name, {})).fit(frame, (score > 0).astype(int))
    path = save_model(old, tmp_path / "old.slm")
    loaded = load_model(path)
    assert not hasattr(loaded, "category_indicators_") and loaded.n_features_in_ == 2
    codes = np.c_[frame["x0"], frame["cat"].cat.codes].astype(np.float32)
    with pytest.warns(UserWarning, match="X does not have valid feature names"):
        by_codes = old.decision_function(codes)  # an array: taken by position
    np.testing.assert_array_equal(loaded.decision_function(frame), by_codes)


def test_feature_names_in_round_trips_and_old_files_keep_their_reading(tmp_path: Path) -> None:
    import pandas as pd
    from sklearn.linear_model import LogisticRegression

    from streamlearn.models import SuperSparseClassifier

    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 3)).astype(np.float32)
    y = X[:, 0] > 0
    for data, names in ((X, ["x0", "x1", "x2"]), (pd.DataFrame(X, columns=["a", "b", "c"]),
                                                 ["a", "b", "c"])):
        model = SuperSparseClassifier(n_prototypes=4, max_iter=3).fit(data, y)
        named = hasattr(LogisticRegression().fit(data, y), "feature_names_in_")
        path = save_model(model, tmp_path / "m.slm")
        loaded = load_model(path)
        assert hasattr(loaded, "feature_names_in_") == named
        # a file written before the flag was kept: names x0, x1, ... were an array's
        old = _rewritten(path, tmp_path / "old.slm",
                         lambda h: h["metadata"]["learned"].pop("_unnamed_features_"))
        before = load_model(old)
        assert "_unnamed_features_" not in vars(before)
        assert hasattr(before, "feature_names_in_") == named
        assert list(vars(before)["feature_names_in_"]) == names
        np.testing.assert_array_equal(before.predict(data), model.predict(data))
