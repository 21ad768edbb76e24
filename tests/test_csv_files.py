"""CSV files read as a source, against pandas.read_csv of the same files."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from streamlearn.data import open_dataset
from streamlearn.data.sources import csv_files
from streamlearn.errors import DataError, ReadError, SchemaError, SourceError
from streamlearn.models import AdditiveSVC


def make_frame(n: int = 600, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"a": rng.normal(size=n).round(4),
                          "b": rng.integers(0, 50, size=n),       # integers: read as floats
                          "c": rng.uniform(-3, 3, size=n).round(3)})
    frame["label"] = np.where(frame["a"] * frame["c"] > 0, "pos", "neg")
    return frame


def read_all(ds) -> tuple[np.ndarray, np.ndarray]:
    chunks = list(ds.chunks())
    return (np.vstack([c.X for c in chunks]),
            np.asarray(ds.classes)[np.concatenate([c.y for c in chunks])])


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(csv_files, "CSV_BLOCK_BYTES", 2_000)


def test_rows_match_pandas_over_many_blocks(tmp_path: Path, small_blocks: None) -> None:
    frame = make_frame()
    path = tmp_path / "train.csv"
    frame.to_csv(path, index=False)
    ds = open_dataset(path, target="label")
    assert len(ds.source.pieces) > 5  # several byte blocks, rows counted per block
    assert list(ds.feature_names) == ["a", "b", "c"] and ds.n_rows == len(frame)
    X, y = read_all(ds)
    reference = pd.read_csv(path)
    np.testing.assert_array_equal(X, reference[["a", "b", "c"]].to_numpy(np.float32))
    np.testing.assert_array_equal(y, reference["label"].to_numpy())
    # shuffled passes read the same rows
    shuffled = np.vstack([c.X for c in ds.chunks(shuffle=True, seed=3, epoch=1)])
    assert sorted(map(tuple, shuffled)) == sorted(map(tuple, X))


@pytest.mark.parametrize("name", ["train.tsv", "train.csv.gz", "train.csv.bz2"])
def test_tabs_and_compression(tmp_path: Path, name: str) -> None:
    frame = make_frame(200, seed=1)
    path = tmp_path / name
    frame.to_csv(path, index=False, sep="\t" if ".tsv" in name else ",")
    X, y = read_all(open_dataset(path, target="label"))
    np.testing.assert_array_equal(X, frame[["a", "b", "c"]].to_numpy(np.float32))
    np.testing.assert_array_equal(y, frame["label"].to_numpy())


def test_an_integer_target_is_a_class_target_as_in_parquet(tmp_path: Path,
                                                          small_blocks: None) -> None:
    frame = make_frame()
    frame["y01"] = (frame["label"] == "pos").astype(int)
    frame["score"] = frame["a"] * 2.5  # floats: a regression target
    frame.to_csv(tmp_path / "t.csv", index=False)
    frame.to_parquet(tmp_path / "t.parquet")
    for name in ("t.csv", "t.parquet"):
        ds = open_dataset(tmp_path / name, target="y01", exclude=["label", "score"])
        assert ds.task == "classification", name
        assert ds.classes.tolist() == [0, 1] and ds.classes.dtype.kind == "i"
        codes = np.concatenate([c.y for c in ds.chunks()])
        np.testing.assert_array_equal(ds.classes[codes], frame["y01"].to_numpy())
        assert open_dataset(tmp_path / name, target="score",
                            exclude=["label", "y01"]).task == "regression"
    # a block with a missing value keeps floats; whole numbers come back as integers
    frame.loc[5, "b"] = np.nan
    frame.to_csv(tmp_path / "m.csv", index=False)
    ds = open_dataset(tmp_path / "m.csv", target="y01", exclude=["label", "score"],
                      nan_policy=-1.0)
    X = np.vstack([c.X for c in ds.chunks()])
    np.testing.assert_array_equal(X[:, 1], frame["b"].fillna(-1.0).to_numpy(np.float32))


def test_integer_labels_beyond_2_53_keep_every_digit(tmp_path: Path,
                                                    small_blocks: None) -> None:
    """Parsed as floats, 2**53 + 1 would become 2**53 and merge with it; parsed as
    integers they stay apart, as in parquet, and missing values still follow nan_policy."""
    from streamlearn.errors import DataError, LabelError

    rng = np.random.default_rng(3)
    n = 300
    labels = np.array([2**53, 2**53 + 1, 2**53 + 4], dtype=np.int64)
    frame = pd.DataFrame({"a": rng.normal(size=n).round(4), "t": labels[np.arange(n) % 3],
                          "score": rng.normal(size=n).round(6)})
    frame.to_csv(tmp_path / "big.csv", index=False)
    ds = open_dataset(tmp_path / "big.csv", target="t", exclude=["score"])
    assert len(ds.source.pieces) > 3
    np.testing.assert_array_equal(ds.classes, np.unique(frame["t"].to_numpy()))
    codes = np.concatenate([c.y for c in ds.chunks()])
    np.testing.assert_array_equal(ds.classes[codes], frame["t"].to_numpy())
    # a float target is read as before
    ds = open_dataset(tmp_path / "big.csv", target="score", exclude=["t"])
    np.testing.assert_array_equal(np.concatenate([c.y for c in ds.chunks()]),
                                  frame["score"].to_numpy(np.float32))
    # a missing integer label: refused, or its row dropped, by nan_policy
    small = frame.assign(t=pd.array(np.arange(n) % 3, dtype="Int64"))
    small.loc[250, "t"] = pd.NA
    small.to_csv(tmp_path / "missing.csv", index=False)
    with pytest.raises(LabelError, match=r"target 't' has NaN .*nan_policy='drop'"):
        list(open_dataset(tmp_path / "missing.csv", target="t", exclude=["score"]).chunks())
    ds = open_dataset(tmp_path / "missing.csv", target="t", exclude=["score"],
                      classes=[0, 1, 2])
    with pytest.raises(DataError, match=r"target 't' is nan at .*row 250.*nan_policy='drop'"):
        list(ds.chunks())
    ds = open_dataset(tmp_path / "missing.csv", target="t", exclude=["score"],
                      nan_policy="drop")
    kept = small.dropna()
    assert ds.classes.tolist() == [0, 1, 2]
    np.testing.assert_array_equal(ds.classes[np.concatenate([c.y for c in ds.chunks()])],
                                  kept["t"].to_numpy(np.int64))
    # an integer column holding other numbers in a later block is read with floats there
    text = frame.to_csv(index=False).splitlines()
    text[280] = text[280].replace(text[280].split(",")[1], "2.5")
    (tmp_path / "half.csv").write_text("\n".join(text) + "\n")
    ds = open_dataset(tmp_path / "half.csv", target="score")
    X = np.vstack([c.X for c in ds.chunks()])
    np.testing.assert_array_equal(
        X, pd.read_csv(tmp_path / "half.csv")[["a", "t"]].to_numpy(np.float32))


def test_directory_of_files_in_name_order(tmp_path: Path, small_blocks: None) -> None:
    parts = [make_frame(150, seed=s) for s in range(3)]
    folder = tmp_path / "parts"
    folder.mkdir()
    for i, part in enumerate(parts):
        part.to_csv(folder / f"part-{i}.csv", index=False)
    (folder / "_SUCCESS").write_text("")  # marker files are ignored
    X, _ = read_all(open_dataset(folder, target="label"))
    np.testing.assert_array_equal(
        X, pd.concat(parts)[["a", "b", "c"]].to_numpy(np.float32))
    (folder / "notes.txt").write_text("x")
    with pytest.raises(SourceError, match="only .csv or .tsv"):
        open_dataset(folder, target="label", format="csv")


def test_files_whose_columns_differ_and_empty_files_are_named(tmp_path: Path) -> None:
    folder = tmp_path / "parts"
    folder.mkdir()
    (folder / "1.csv").write_text("a,b,label\n1,2,x\n3,4,y\n")
    (folder / "2.csv").write_text("a,label\n5,x\n")
    with pytest.raises(SchemaError, match=r"2.csv lacks column\(s\) \['b'\] that .*1.csv"):
        open_dataset(folder, target="label")
    (folder / "2.csv").write_text("a,b,c,label\n5,6,7,x\n")
    with pytest.raises(SchemaError, match=r"2.csv has column\(s\) \['c'\] that .*1.csv lacks"):
        open_dataset(folder, target="label")
    (folder / "2.csv").write_text("b,a,label\n6,5,x\n")  # the same columns, in another order
    X, _ = read_all(open_dataset(folder, target="label"))
    np.testing.assert_array_equal(X, [[1, 2], [3, 4], [5, 6]])
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(ReadError, match="empty.csv is empty"):
        open_dataset(tmp_path / "empty.csv")


def test_text_columns_are_categorical_features(tmp_path: Path) -> None:
    frame = make_frame(400, seed=2)
    frame["colour"] = np.where(frame["b"] % 2 == 0, "red", "blue")
    path = tmp_path / "train.csv"
    frame.to_csv(path, index=False)
    # against the same rows in one parquet row group (pieces shuffled alike)
    parquet = tmp_path / "train.parquet"
    frame.astype({"b": np.float64}).to_parquet(parquet, row_group_size=len(frame))
    # the settings the defaults keep on 400 rows without folds choosing (the reading is
    # what is compared, not the choice)
    params = {"progress": False, "random_state": 0, "n_bases": 8, "interactions": 0}
    from_csv = AdditiveSVC(**params).fit(str(path), "label")
    from_frame = AdditiveSVC(**params).fit(str(parquet), "label")
    assert list(from_csv.feature_names_in_) == ["a", "b", "c", "colour"]
    rows = frame.drop(columns="label")
    np.testing.assert_allclose(from_csv.decision_function(rows),
                               from_frame.decision_function(rows), rtol=1e-5, atol=1e-6)


def test_a_block_that_does_not_parse_names_the_source(tmp_path: Path,
                                                      small_blocks: None) -> None:
    frame = make_frame()
    path = tmp_path / "bad.csv"
    text = frame.to_csv(index=False).splitlines()
    text[500] = "1.0,not-a-number,2.0,pos"  # far past the rows the types are taken from
    path.write_text("\n".join(text) + "\n")
    # the file, line, column and value, in one line
    with pytest.raises(ReadError, match=r"bad\.csv, line 501, column 'b': 'not-a-number' "
                                        "is not a number") as error:
        list(open_dataset(path, target="label").chunks())
    assert "\n" not in str(error.value)
    # a block that breaks otherwise keeps the parser's words, naming the source
    text[500] = "1.0,2,2.0,pos,extra,fields"
    path.write_text("\n".join(text) + "\n")
    with pytest.raises(ReadError, match="CSV .*bad.csv"):
        list(open_dataset(path, target="label").chunks())


def test_mixed_separators_are_refused(tmp_path: Path) -> None:
    folder = tmp_path / "mixed"
    folder.mkdir()
    make_frame(50).to_csv(folder / "a.csv", index=False)
    make_frame(50).to_csv(folder / "b.tsv", index=False, sep="\t")
    with pytest.raises(SourceError, match="mixes .csv and .tsv"):
        open_dataset(folder, target="label")


def test_a_shuffled_pass_parses_blocks_in_turn(tmp_path: Path, small_blocks: None,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "train.csv"
    make_frame().to_csv(path, index=False)
    ds = open_dataset(path, target="label", chunk_rows=16, prefetch=0)
    parsed: list[int] = []
    compute = csv_files.CsvSource._compute

    def counted(self, i, names):
        parsed.append(i)
        return compute(self, i, names)

    monkeypatch.setattr(csv_files.CsvSource, "_compute", counted)
    assert list(ds.classes) == ["neg", "pos"]  # the label scan reads every block once
    assert sorted(parsed) == list(range(len(ds.source.pieces)))

    def parses_of_a_pass() -> int:
        parsed.clear()
        rows = np.concatenate([c.rows for c in ds.chunks(shuffle=True, seed=1, epoch=2)])
        assert sorted(rows.tolist()) == list(range(ds.n_rows))
        return len(parsed)

    # the chunks of a block come together: each block is parsed once, and once more for
    # a chunk that crosses into it from a block visited before (the reader keeps two)
    offsets = np.cumsum([0] + [p.n_rows for p in ds.source.pieces])
    starts = np.arange(0, ds.n_rows, 16)
    crossings = sum(int(np.searchsorted(offsets, min(a + 16, ds.n_rows) - 1, "right")
                        - np.searchsorted(offsets, a, "right")) for a in starts)
    grouped = parses_of_a_pass()
    assert grouped <= len(ds.source.pieces) + crossings
    monkeypatch.setattr(csv_files.CsvSource, "shuffle_by_piece", False)
    assert parses_of_a_pass() > 1.5 * grouped  # chunks in any order re-parse their blocks


def test_a_number_column_spoiled_by_a_text_cell_is_named(tmp_path: Path) -> None:
    from streamlearn.errors import SchemaError

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"age": rng.integers(18, 90, 500).astype(str),
                          "x": rng.normal(size=500), "y": rng.integers(0, 2, 500)})
    frame.loc[7, "age"] = "unknown"
    frame.to_csv(tmp_path / "age.csv", index=False)
    with pytest.warns(UserWarning, match=r"'age' .* all its values but 1 are numbers "
                                         r"\('unknown'\)"):
        categories = open_dataset(str(tmp_path / "age.csv"), target="y").categories
    assert "unknown" in categories["age"]
    # with too many distinct values to be categories, the error says the same
    amounts = pd.DataFrame({"amount": rng.normal(size=2000).round(4).astype(str),
                            "y": rng.integers(0, 2, 2000)})
    amounts.loc[5, "amount"] = "unknown"
    amounts.to_csv(tmp_path / "amounts.csv", index=False)
    with pytest.raises(SchemaError, match="identifier .* all its values but 1 are numbers"):
        _ = open_dataset(str(tmp_path / "amounts.csv"), target="y").categories
    # true categories that happen to include numbers stay quiet
    words = pd.DataFrame({"city": rng.choice(["Lima", "Oslo", "12", "Rome"], 300),
                          "y": rng.integers(0, 2, 300)})
    words.to_csv(tmp_path / "words.csv", index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        _ = open_dataset(str(tmp_path / "words.csv"), target="y").categories


def test_a_label_column_empty_on_the_first_rows_reads_as_text(tmp_path: Path,
                                                               small_blocks: None) -> None:
    """A column empty on the first rows (whose types are taken from them) and text later
    is text: nan_policy="drop" drops the rows of the missing labels, as pandas reads
    them, and "raise" names the first one's line."""
    frame = make_frame(600, seed=4)
    frame.loc[:119, "label"] = None  # more than the first block's rows
    frame.loc[[300, 301], "label"] = None
    path = tmp_path / "late.csv"
    frame.to_csv(path, index=False)
    reference = pd.read_csv(path)
    keep = reference["label"].notna().to_numpy()
    ds = open_dataset(path, target="label", nan_policy="drop")
    assert len(ds.source.pieces) > 5 and ds.source.pieces[0].n_rows < 120
    X, y = read_all(ds)
    np.testing.assert_array_equal(X, reference.loc[keep, ["a", "b", "c"]].to_numpy(np.float32))
    np.testing.assert_array_equal(y, reference.loc[keep, "label"].to_numpy())
    model = AdditiveSVC(n_bases=5, interactions=0, epochs=2, tol=None, progress=False,
                        random_state=0)
    model.fit(str(path), "label", nan_policy="drop")
    np.testing.assert_array_equal(model.classes_, sorted(set(reference["label"].dropna())))
    with pytest.raises(DataError, match=r"'label' is missing .*line 2 of .*late\.csv"):
        list(open_dataset(path, target="label").chunks())
    # a text feature empty on the first rows is a categorical feature, as pandas reads it
    words = frame.assign(label="pos", colour=np.where(frame["b"] % 2 == 0, "red", "blue"))
    words.loc[:149, "colour"] = None
    words.to_csv(tmp_path / "words.csv", index=False)
    read = pd.read_csv(tmp_path / "words.csv")
    assert sorted(open_dataset(tmp_path / "words.csv", target="label").categories["colour"]) \
        == sorted(read["colour"].dropna().unique())
    # the line within its file, in a later block and in a later file of a directory
    folder = tmp_path / "parts"
    folder.mkdir()
    make_frame(300, seed=5).to_csv(folder / "a.csv", index=False)
    later = make_frame(300, seed=6)
    later.loc[[210, 250], "label"] = None
    later.to_csv(folder / "b.csv", index=False)
    with pytest.raises(DataError, match=r"row 510 of .*, line 212 of .*b\.csv"):
        list(open_dataset(folder, target="label").chunks())
