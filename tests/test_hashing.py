"""Feature hashing: MurmurHash3 against its published vectors, hashed svmlight rows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.utils import murmurhash3_32 as sklearn_murmur

from streamlearn.data.dataset import Dataset
from streamlearn.data.hashing import (
    check_hash_features,
    hash_strings,
    hashed_column,
    murmur3_32,
    sum_duplicates,
)
from streamlearn.data.sources.svmlight import SvmlightSource
from streamlearn.data.sparse_rows import SparseRows
from streamlearn.errors import ReadError

M32 = 0xFFFFFFFF


def py_murmur3(data: bytes, seed: int = 0) -> int:
    """MurmurHash3_x86_32 as published (Appleby's reference C code), in plain Python."""

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & M32

    c1, c2 = 0xCC9E2D51, 0x1B873593
    h = seed & M32
    n = len(data)
    blocks = n // 4
    for b in range(blocks):
        k = int.from_bytes(data[4 * b: 4 * b + 4], "little")
        k = rotl((k * c1) & M32, 15) * c2 & M32
        h = (rotl(h ^ k, 13) * 5 + 0xE6546B64) & M32
    tail = data[4 * blocks:]
    k = 0
    for j in reversed(range(len(tail))):
        k ^= tail[j] << (8 * j)
    if tail:
        h ^= rotl((k * c1) & M32, 15) * c2 & M32
    h ^= n
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & M32
    return h ^ (h >> 16)


def nb_murmur(data: bytes, seed: int = 0) -> int:
    """The compiled hash of ``data``, placed inside a larger buffer (start and end count)."""
    buf = np.frombuffer(b"\xff\x00" + data + b"\x07", dtype=np.uint8)
    return int(murmur3_32(buf, 2, 2 + len(data), seed))


def hashed(name: str, n: int) -> tuple[int, float]:
    """Reference column and sign: the low bits, and bit 31 for the sign."""
    h = py_murmur3(name.encode())
    return h & (n - 1), -1.0 if h >> 31 else 1.0


# Published test vectors (SMHasher / the reference implementation's users).
PUBLISHED = [
    (b"", 0, 0),
    (b"", 1, 0x514E28B7),
    (b"", 0xFFFFFFFF, 0x81F16F39),
    (b"\x00\x00\x00\x00", 0, 0x2362F9DE),
    (b"aaaa", 0x9747B28C, 0x5A97808A),
    (b"abc", 0, 0xB3DD93FA),
    (b"Hello, world!", 0x9747B28C, 0x24884CBA),
    (b"The quick brown fox jumps over the lazy dog", 0, 0x2E4FF723),
    (b"The quick brown fox jumps over the lazy dog", 0x9747B28C, 0x2FA826CD),
]


@pytest.mark.parametrize(("data", "seed", "expected"), PUBLISHED)
def test_murmur_published_vectors(data: bytes, seed: int, expected: int) -> None:
    assert py_murmur3(data, seed) == expected
    assert nb_murmur(data, seed) == expected


def test_murmur_matches_reference() -> None:
    words = [b"", b"a", b"ab", b"abc", b"abcd", b"Hello, world!", "café=naïve".encode()]
    rng = np.random.default_rng(0)
    words += [rng.integers(0, 256, n).astype(np.uint8).tobytes() for n in range(1, 20)]
    for data in words:
        for seed in (0, 1, 0x9747B28C):
            expected = py_murmur3(data, seed)
            assert nb_murmur(data, seed) == expected
            assert sklearn_murmur(data, seed=seed, positive=True) == expected


def test_hashed_column_and_sign() -> None:
    for h in (0, 5, 0x7FFFFFFF, 0x80000000, 0x80000005, 0xFFFFFFFF, 0x12345678):
        for n in (2, 4, 2**20, 2**30):
            column, sign = hashed_column(np.uint32(h), n)
            assert column == h % n
            assert sign == (-1.0 if h >= 2**31 else 1.0)


@pytest.mark.parametrize("bad", [0, 1, 3, 6, 2**31, -4, True, 4.0, "16", None])
def test_check_hash_features(bad: object) -> None:
    with pytest.raises(ValueError, match="hash_features"):
        check_hash_features(bad)
    assert check_hash_features(np.int64(8)) == 8 and check_hash_features(2**30) == 2**30


def test_sum_duplicates_and_hash_strings() -> None:
    rng = np.random.default_rng(1)
    for n in (0, 1, 5, 24, 25, 200):  # insertion sort and heap sort
        cols = rng.integers(0, 7, n).astype(np.int64)
        vals = rng.normal(size=n)
        expected: dict[int, float] = {}
        for c, v in zip(cols.tolist(), vals.tolist(), strict=True):
            expected[c] = expected.get(c, 0.0) + v  # summed in order of appearance
        c2 = np.concatenate([[9], cols, [9]])
        v2 = np.concatenate([[0.5], vals, [0.5]])
        m = sum_duplicates(c2, v2, 1, n + 1, np.empty(n, np.int64), np.empty(n))
        assert m == len(expected)
        assert c2[1: m + 1].tolist() == sorted(expected)
        assert v2[1: m + 1].tolist() == [expected[c] for c in sorted(expected)]
    words = ["", "a", "mot", "x" * 100]
    data = "".join(words).encode()
    offsets = np.cumsum([0] + [len(w) for w in words]).astype(np.int64)
    out = np.empty(len(words), dtype=np.uint32)
    hash_strings(np.frombuffer(b"col=", dtype=np.uint8), offsets,
                 np.frombuffer(data, dtype=np.uint8), out)
    assert out.tolist() == [py_murmur3(f"col={w}".encode()) for w in words]


# --------------------------------------------------------------------------- svmlight
TEXT = """\
1 qid:4 the:1 cat:2.5 the:1 # a comment: with colons
# only a comment

-1 3:1 17:-0.25 colour=red:1 Zoë:2e-3
0 dog:1 cat:0.5 bird:-1 fish:3 the:1 a:1 b:1 c:1 d:-2.5
2.5 12:7
0
1 x:1e30 y:1e30 z:-1e30
"""


def reference_rows(text: str, n: int) -> tuple[sp.csr_matrix, np.ndarray]:
    """Rows of hashed svmlight text: every name hashed in Python, collisions summed."""
    rows, labels = [], []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        label, *tokens = line.split()
        labels.append(float(label))
        row: dict[int, float] = {}
        for k, tok in enumerate(tokens):
            name, value = tok.split(":", 1)
            if name == "qid" and k == 0:
                continue
            column, sign = hashed(name, n)
            row[column] = row.get(column, 0.0) + sign * float(value)
        rows.append(row)
    # explicit zeros (values that cancelled) stay stored, as the parser keeps them
    indptr = np.cumsum([0] + [len(row) for row in rows])
    indices = [c for row in rows for c in sorted(row)]
    data = np.array([row[c] for row in rows for c in sorted(row)], dtype=np.float32)
    return sp.csr_matrix((data, indices, indptr), shape=(len(rows), n)), np.array(labels)


def read_all(src: SvmlightSource) -> tuple[sp.csr_matrix, np.ndarray]:
    blocks = [src.read_piece(i, [], "y", None) for i in range(len(src.pieces))]
    rows = SparseRows.concatenate([b.X for b in blocks])
    for b in blocks:
        for r in range(b.X.n_rows):  # valid CSR: distinct, ascending columns in range
            cols = b.X.indices[b.X.indptr[r]:b.X.indptr[r + 1]]
            assert (np.diff(cols) > 0).all() and (cols >= 0).all() and (cols < src.n_features).all()
    X = sp.csr_matrix(rows.to_scipy())
    X.sort_indices()
    return X, np.concatenate([b.y for b in blocks])


@pytest.mark.parametrize("n", [4, 2**20])
def test_hashed_svmlight_matches_reference(tmp_path: Path, n: int) -> None:
    path = tmp_path / "words.svm"
    path.write_text(TEXT, encoding="utf-8")
    src = SvmlightSource(str(path), hash_features=n, piece_rows=2, zero_based=False)
    assert src.n_features == n and src.hash_features == n and src.zero_based
    assert [p.n_rows for p in src.pieces] == [2, 2, 2]
    X, y = read_all(src)
    X_ref, y_ref = reference_rows(TEXT, n)
    np.testing.assert_array_equal(y, y_ref)
    assert X.shape == X_ref.shape
    np.testing.assert_array_equal(X.indptr, X_ref.indptr)
    np.testing.assert_array_equal(X.indices, X_ref.indices)
    np.testing.assert_array_equal(X.data, X_ref.data)
    assert src.nnz == X.nnz
    if n == 4:  # a tiny table: collisions merged the rows' entries
        assert X.nnz < sum(len(line.split()) for line in TEXT.splitlines())

    ds = Dataset(src, target="y", chunk_rows=4)
    chunks = list(ds.chunks())
    assert [c.X.n_rows for c in chunks] == [4, 2]
    got = sp.vstack([c.X.to_scipy() for c in chunks]).tocsr()
    assert abs(got - X).max() == 0
    np.testing.assert_array_equal(np.concatenate([c.y for c in chunks]), y_ref)


def test_hashed_collisions_add_up(tmp_path: Path) -> None:
    # the same name twice, and names forced onto one column of two
    path = tmp_path / "c.svm"
    path.write_text("1 a:1 a:2 b:4 c:8 d:16\n", encoding="utf-8")
    X, _ = read_all(SvmlightSource(str(path), hash_features=2))
    expected = np.zeros(2)
    for name, v in (("a", 1), ("a", 2), ("b", 4), ("c", 8), ("d", 16)):
        column, sign = hashed(name, 2)
        expected[column] += sign * v
    np.testing.assert_array_equal(X.toarray()[0], expected.astype(np.float32))


def test_hashed_svmlight_errors(tmp_path: Path) -> None:
    path = tmp_path / "ok.svm"
    path.write_text("1 a:1\n", encoding="utf-8")
    for bad in (3, 1, 0, 2**31, True, 2.0):
        with pytest.raises(ValueError, match="hash_features"):
            SvmlightSource(str(path), hash_features=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="n_features=8 contradicts hash_features=16"):
        SvmlightSource(str(path), hash_features=16, n_features=8)
    assert SvmlightSource(str(path), hash_features=16, n_features=16).n_features == 16

    cases = {
        "1 a:1\n0 word b:2\n": "line 2: expected name:value, found a token without ':' at 'word'",
        "1 a:1\n0 :2\n": "line 2: the feature name before ':' is empty",
        "1 a:1\n0 b:x\n": "line 2: the feature value is not a number at 'x'",
        "1 a:3e38 a:3e38\n": "line 1: the values of features hashed to one column sum beyond",
        "x a:1\n": "line 1: the label is not a number",
    }
    for k, (text, message) in enumerate(cases.items()):
        bad = tmp_path / f"bad{k}.svm"
        bad.write_text(text, encoding="utf-8")
        with pytest.raises(ReadError, match=message) as info:
            SvmlightSource(str(bad), hash_features=4)
        assert str(bad) in str(info.value)


def test_named_features_need_hashing(tmp_path: Path) -> None:
    path = tmp_path / "named.svm"
    path.write_text("1 1:1\n0 2:1 colour:3\n", encoding="utf-8")
    with pytest.raises(ReadError, match=r"line 2: the feature index is not a non-negative "
                       r"integer at 'colour:3'.*pass hash_features=2\*\*20") as info:
        SvmlightSource(str(path))
    assert str(path) in str(info.value)
    bare = tmp_path / "bare.svm"
    bare.write_text("1 1:1 word\n", encoding="utf-8")
    with pytest.raises(ReadError, match="line 1: expected index:value") as info:
        SvmlightSource(str(bare))
    assert "hash_features" not in str(info.value)
    negative = tmp_path / "negative.svm"
    negative.write_text("1 -3:1\n", encoding="utf-8")
    with pytest.raises(ReadError, match="not a non-negative integer") as info:
        SvmlightSource(str(negative))
    assert "hash_features" not in str(info.value)


def test_open_dataset_hashes_svmlight_names(tmp_path) -> None:
    from streamlearn import open_dataset

    path = tmp_path / "words.svm"
    path.write_text("1 cat:1 dog:2\n0 dog:1 7:3\n")
    ds = open_dataset(str(path), hash_features=2**10)
    assert ds.is_sparse and ds.n_features == 2**10 and ds.task == "classification"
    X = np.concatenate([c.X.toarray() for c in ds.chunks()])
    assert sorted(np.abs(X[0][X[0] != 0]).tolist()) == [1.0, 2.0]
    assert sorted(np.abs(X[1][X[1] != 0]).tolist()) == [1.0, 3.0]


def test_a_dataset_hashed_otherwise_than_the_training_rows_is_refused(tmp_path) -> None:
    """Rows hashed into another number of columns, or hashed where the training rows were
    not (or not where they were), put other features under the model's columns: scored,
    they gave a plausible, wrong accuracy. ``score`` and ``evaluate`` of such a Dataset
    refuse it; the rows hashed as in fit score as the same rows in memory do."""
    from streamlearn import evaluate, open_dataset
    from streamlearn.errors import SchemaError
    from streamlearn.models import ShareBoostClassifier

    rng = np.random.default_rng(0)
    lines = []
    for _ in range(300):
        ids = rng.choice(12, size=3, replace=False) + 1
        lines.append(f"{int(1 in ids or 2 in ids)} " + " ".join(f"{i}:1" for i in sorted(ids)))
    path = tmp_path / "ids.svm"
    path.write_text("\n".join(lines) + "\n")
    hashed = ShareBoostClassifier().fit(open_dataset(str(path), hash_features=64))
    assert hashed.hash_features_ == 64
    chunks = list(open_dataset(str(path), hash_features=64).chunks(shuffle=False))
    X = sp.vstack([c.X.to_scipy() for c in chunks])
    y = np.concatenate([hashed.classes_[c.y] for c in chunks])
    in_memory = hashed.score(X, y)
    assert hashed.score(open_dataset(str(path), hash_features=64)) == pytest.approx(in_memory)
    assert hashed.score(str(path)) == pytest.approx(in_memory)
    with pytest.raises(SchemaError, match="hashed with hash_features=64.*opened with "
                                          "hash_features=32"):
        hashed.score(open_dataset(str(path), hash_features=32))
    with pytest.raises(SchemaError, match="opened without hash_features"):
        evaluate(hashed, open_dataset(str(path)))
    plain = ShareBoostClassifier().fit(open_dataset(str(path)))
    with pytest.raises(SchemaError, match="not hashed.*hash_features=16"):
        plain.score(open_dataset(str(path), hash_features=16))


def reference_table_rows(frame, columns: list[str], n: int) -> sp.csr_matrix:
    """Hashed rows of a table, by the pure-Python hash: ``(hash("c"), v)`` for a number,
    ``(hash("c=s"), 1)`` for a string, one entry per list token, collisions summed."""
    X = np.zeros((len(frame), n))
    for r, row in enumerate(frame[columns].itertuples(index=False)):
        for name, value in zip(columns, row, strict=True):
            if isinstance(value, str):
                entries = [(f"{name}={value}", 1.0)]
            elif isinstance(value, list | np.ndarray):
                entries = [(f"{name}={token}", 1.0) for token in value]
            else:
                entries = [(name, float(value))] if value != 0 else []
            for key, v in entries:
                column, sign = hashed(key, n)
                X[r, column] += sign * v
    return sp.csr_matrix(X.astype(np.float32))


def test_a_table_given_to_a_model_of_hashed_columns_is_hashed_as_in_fit(tmp_path) -> None:
    """predict of a pandas, polars or pyarrow table hashes its columns as the parquet file
    they were trained from was hashed (as ``score`` of the file's path reads it), not
    taking the table's columns for the hashed ones."""
    import pandas as pd
    import polars as pl
    import pyarrow as pa

    from streamlearn import open_dataset
    from streamlearn.data.sources.parquet_sparse import hash_table
    from streamlearn.errors import SchemaError
    from streamlearn.models import ShareBoostClassifier

    rng = np.random.default_rng(1)
    n_rows, n = 400, 64
    frame = pd.DataFrame({
        "a": rng.normal(size=n_rows), "k": rng.integers(0, 3, n_rows),
        "c": rng.choice(["red", "green", "blue"], n_rows),
        "tags": [list(rng.choice(["x", "y", "z"], rng.integers(0, 3))) for _ in range(n_rows)],
    })
    frame["label"] = ((frame.a > 0) ^ (frame.c == "red")).astype(int)
    path = tmp_path / "t.parquet"
    frame.to_parquet(path)
    model = ShareBoostClassifier().fit(open_dataset(str(path), target="label",
                                                    hash_features=n))
    assert model.hashed_columns_ == ("a", "k", "c", "tags")
    reference = reference_table_rows(frame, ["a", "k", "c", "tags"], n)
    rows = hash_table(pa.Table.from_pandas(frame), n, model.hashed_columns_)
    np.testing.assert_array_equal(rows.to_scipy().toarray(), reference.toarray())
    expected = model.decision_function(reference)
    features = frame.drop(columns="label")
    for X in (features, frame, pa.Table.from_pandas(features), pl.from_pandas(features)):
        np.testing.assert_array_equal(model.decision_function(X), expected)
    assert model.score(features, frame.label) == pytest.approx(
        model.score(str(path), "label"))
    with pytest.raises(SchemaError, match=r"lacks the column\(s\) \['c'\].*hash_features_=64"):
        model.predict(features.drop(columns="c"))
    with pytest.raises(SchemaError, match="X has 2 features, but ShareBoostClassifier was "
                                          r"trained on hashed features \(hash_features_=64"):
        model.predict(frame[["a", "k"]].to_numpy())


def test_a_table_given_to_a_model_of_hashed_svmlight_names_is_refused(tmp_path) -> None:
    import pandas as pd

    from streamlearn import open_dataset
    from streamlearn.errors import SchemaError
    from streamlearn.models import ShareBoostClassifier

    rng = np.random.default_rng(2)
    path = tmp_path / "w.svm"
    path.write_text("".join(f"{k % 2} w{k % 2}:1 v{rng.integers(5)}:2\n" for k in range(60)))
    model = ShareBoostClassifier().fit(open_dataset(str(path), hash_features=16))
    with pytest.raises(SchemaError, match=r"hash_features_=16, from the entry names of "
                                          "svmlight text.*cannot be hashed"):
        model.predict(pd.DataFrame({"w0": [1.0], "v1": [2.0]}))


def test_columns_of_other_types_than_fit_s_are_refused_by_a_model_of_hashed_columns(
        tmp_path) -> None:
    """A model trained on hashed parquet columns refuses a table or file whose column is
    hashed otherwise than in fit (numbers where fit saw text, text where it saw numbers),
    naming the column and both types, in memory, by ``score`` of a path and by
    ``streamlearn predict``; types hashed alike (int for float, categorical for string)
    score as the pure-Python hashing of the rows does."""
    import pandas as pd
    import pyarrow as pa
    from click.testing import CliRunner

    from streamlearn import open_dataset
    from streamlearn.cli import cli
    from streamlearn.errors import SchemaError
    from streamlearn.io import load_model
    from streamlearn.models import ShareBoostClassifier

    rng = np.random.default_rng(7)
    n_rows, n = 300, 64
    frame = pd.DataFrame({"a": rng.normal(size=n_rows).round(1),
                          "k": rng.integers(0, 3, n_rows).astype(float),
                          "c": rng.choice(["1", "2", "3"], n_rows)})
    frame["label"] = ((frame.a > 0) ^ (frame.c == "1")).astype(int)
    path = tmp_path / "t.parquet"
    frame.to_parquet(path)
    model = ShareBoostClassifier().fit(open_dataset(str(path), target="label",
                                                    hash_features=n))
    assert model.hashed_kinds_ == ("numeric", "numeric", "string")
    features = frame[["a", "k", "c"]]
    # compatible: an integer column where fit saw floats, a categorical one for strings
    alike = features.assign(k=features.k.astype(int), c=features.c.astype("category"))
    expected = model.decision_function(reference_table_rows(features, ["a", "k", "c"], n))
    np.testing.assert_array_equal(model.decision_function(alike), expected)
    model_path = tmp_path / "m.slm"
    model.save(model_path)
    assert load_model(model_path).hashed_kinds_ == model.hashed_kinds_
    numbers = features.assign(c=features.c.astype(int))  # '1' -> 1: hashed as c times 1
    text = features.assign(a=features.a.astype(str))
    for X, column, now, before in ((numbers, "c", "int64", "text or categories"),
                                   (text, "a", "string", "numbers")):
        for given in (X, pa.Table.from_pandas(X, preserve_index=False)):
            with pytest.raises(SchemaError, match=rf"column '{column}' of X is \w*{now} "
                                                  rf".*held {before} in fit"):
                model.predict(given)
        other = tmp_path / f"other_{column}.parquet"
        X.assign(label=frame.label).to_parquet(other)
        with pytest.raises(SchemaError, match=rf"column '{column}' of .*other_{column}"
                                              rf"\.parquet is \w*{now} .*held {before} in "
                                              "fit"):
            model.score(str(other), "label")
        result = CliRunner().invoke(cli, ["predict", str(model_path), str(other), "-o",
                                          str(tmp_path / f"p_{column}.parquet")])
        assert result.exit_code != 0
        assert f"column '{column}'" in result.output and now in result.output
        assert not (tmp_path / f"p_{column}.parquet").exists()
