"""svmlight / libsvm text source: rows against scikit-learn's loader, pieces, errors."""

from __future__ import annotations

import bz2
import gzip
import lzma
import pickle
import uuid
from pathlib import Path

import fsspec
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import dump_svmlight_file as sklearn_dump
from sklearn.datasets import load_svmlight_file, load_svmlight_files

from streamlearn.data import open_dataset
from streamlearn.data.sources import svmlight
from streamlearn.data.sources.base import ColumnKind
from streamlearn.data.sources.svmlight import SvmlightSource, parse_svmlight_lines
from streamlearn.data.sparse_rows import SparseRows
from streamlearn.errors import DataError, ReadError, SchemaError, SourceError

OPENERS = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}


def dump_svmlight_file(X, y, path, **options) -> None:
    """scikit-learn's writer, taking a Path."""
    sklearn_dump(X, y, str(path), **options)


def make_data(n: int = 120, d: int = 15, seed: int = 0, labels: str = "int"):
    """A sparse matrix whose values span many magnitudes (so the text has exponents)."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.3, random_state=seed, format="csr",
                  data_rvs=lambda k: rng.normal(size=k))
    X = X @ sp.diags(10.0 ** rng.integers(-9, 12, d))
    X = sp.lil_matrix(X)
    X[0, 0] = 1.5  # column 0 is used
    X = sp.csr_matrix(X)
    y = rng.integers(0, 3, n).astype(float) if labels == "int" else rng.normal(size=n)
    return X, y


def source_rows(src: SvmlightSource, order: list[int] | None = None):
    """All rows of ``src`` (pieces in ``order``) as a scipy CSR with sorted indices, labels."""
    order = list(range(len(src.pieces))) if order is None else order
    blocks = [src.read_piece(i, [], "y", None) for i in order]
    for block, i in zip(blocks, order, strict=True):
        assert isinstance(block.X, SparseRows)
        assert block.X.n_rows == src.pieces[i].n_rows and block.weight is None
        assert block.X.indptr.dtype == np.int64 and block.X.indptr[0] == 0
        assert block.X.indices.dtype == np.int32 and block.X.values.dtype == np.float32
        assert block.X.n_cols == src.n_features
    X = sp.csr_matrix(SparseRows.concatenate([b.X for b in blocks]).to_scipy())
    X.sort_indices()
    return X, np.concatenate([b.y for b in blocks])


def assert_same_rows(X, y, X_ref, y_ref) -> None:
    """Same structure, labels equal, values within 1 ulp of float32(float(text))."""
    X_ref = sp.csr_matrix(X_ref)
    X_ref.sort_indices()
    assert X.shape == X_ref.shape
    np.testing.assert_array_equal(X.indptr, X_ref.indptr)
    np.testing.assert_array_equal(X.indices, X_ref.indices)
    np.testing.assert_array_max_ulp(X.data, X_ref.data.astype(np.float32), maxulp=1)
    np.testing.assert_array_equal(y, y_ref)


@pytest.mark.parametrize("zero_based", [True, False])
def test_matches_sklearn(tmp_path: Path, zero_based: bool) -> None:
    X, y = make_data()
    path = tmp_path / "a.svm"
    dump_svmlight_file(X, y, path, zero_based=zero_based)
    src = SvmlightSource(str(path))
    assert src.zero_based is zero_based
    assert src.sparse and src.columns == ["y"] and src.description == str(path)
    X_ref, y_ref = load_svmlight_file(str(path))
    assert src.n_features == X_ref.shape[1]
    assert_same_rows(*source_rows(src), X_ref, y_ref)


def test_qid(tmp_path: Path) -> None:
    X, y = make_data()
    path = tmp_path / "q.svm"
    dump_svmlight_file(X, y, path, query_id=np.arange(X.shape[0]) // 7)
    assert b"qid:" in path.read_bytes()
    X_ref, y_ref = load_svmlight_file(str(path))
    assert_same_rows(*source_rows(SvmlightSource(str(path))), X_ref, y_ref)


def test_comments_blank_lines_crlf_tabs(tmp_path: Path) -> None:
    text = ("# a header comment\n"
            "\n"
            "1 1:0.5 3:-2.5e3  # trailing comment\r\n"
            "   \t\n"
            "-1\t2:.5\t4:+1 5:3E-4\n"
            "# a comment line\n"
            "2 qid:3 1:1.5E+10 5:1e-30\n"
            "0\n"
            "3 2:-0.000125 4:7")  # last line without newline
    path = tmp_path / "c.svm"
    path.write_text(text, newline="")
    src = SvmlightSource(str(path), piece_rows=2)
    X_ref, y_ref = load_svmlight_file(str(path))
    assert_same_rows(*source_rows(src), X_ref, y_ref)
    assert [p.n_rows for p in src.pieces] == [2, 2, 1]
    assert [p.label for p in src.pieces] == [f"{path} lines 3-5", f"{path} lines 7-8",
                                             f"{path} lines 9-9"]
    assert [p.file_row for p in src.pieces] == [0, 2, 4]


def test_unsorted_indices(tmp_path: Path) -> None:
    X, y = make_data()
    sorted_path = tmp_path / "sorted.svm"
    dump_svmlight_file(X, y, sorted_path, zero_based=False)
    rng = np.random.default_rng(1)
    lines = []
    for line in sorted_path.read_text().splitlines():
        label, *entries = line.split()
        lines.append(" ".join([label, *rng.permutation(entries)]))
    shuffled = tmp_path / "shuffled.svm"
    shuffled.write_text("\n".join(lines) + "\n")
    X_ref, y_ref = load_svmlight_file(str(sorted_path))
    assert_same_rows(*source_rows(SvmlightSource(str(shuffled))), X_ref, y_ref)


def test_directory_of_two_files(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    X1, y1 = make_data(50, 10, seed=1)
    X2, y2 = make_data(70, 10, seed=2)
    dump_svmlight_file(X1[:, 1:], y1, tmp_path / "d" / "a.svm", zero_based=False)
    dump_svmlight_file(X2, y2, tmp_path / "d" / "b.svm", zero_based=False)
    (tmp_path / "d" / ".hidden").write_text("not svmlight at all\n")
    src = SvmlightSource(str(tmp_path / "d"), piece_rows=30)
    Xa, ya, Xb, yb = load_svmlight_files([str(tmp_path / "d" / "a.svm"),
                                          str(tmp_path / "d" / "b.svm")])
    assert src.files == [str(tmp_path / "d" / "a.svm"), str(tmp_path / "d" / "b.svm")]
    assert [p.n_rows for p in src.pieces] == [30, 20, 30, 30, 10]
    assert [p.file_row for p in src.pieces] == [0, 30, 0, 30, 60]
    assert "a.svm" in src.pieces[1].label and "b.svm lines 31-60" in src.pieces[3].label
    assert_same_rows(*source_rows(src), sp.vstack([Xa, Xb]), np.concatenate([ya, yb]))


@pytest.mark.parametrize("suffix", [".gz", ".bz2", ".xz"])
def test_compressed_pieces_in_any_order(tmp_path: Path, suffix: str,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    X, y = make_data(200)
    plain = tmp_path / "a.svm"
    dump_svmlight_file(X, y, plain, zero_based=False, comment="made for a test")
    packed = tmp_path / f"a.svm{suffix}"
    with OPENERS[suffix](packed, "wb") as f:
        f.write(plain.read_bytes())
    src = SvmlightSource(str(packed), piece_rows=64)
    assert [p.n_rows for p in src.pieces] == [64, 64, 64, 8]
    opened = []
    open_text = src._open_text
    monkeypatch.setattr(src, "_open_text", lambda k: opened.append(k) or open_text(k))
    X_ref, y_ref = load_svmlight_file(str(plain))
    X_in, y_in = source_rows(src)
    assert_same_rows(X_in, y_in, X_ref, y_ref)
    assert len(opened) == 1  # in order: one pass over the file
    # out of order: each step back restarts from the file's beginning (2 | 0, 3 | 1)
    order = [2, 0, 3, 1]
    X_out, y_out = source_rows(src, order)
    assert len(opened) == 4
    starts = np.cumsum([0] + [p.n_rows for p in src.pieces])
    rows = np.concatenate([np.arange(starts[i], starts[i + 1]) for i in order])
    assert_same_rows(X_out, y_out, X_in[rows], y_in[rows])


def test_plain_pieces_out_of_order(tmp_path: Path) -> None:
    X, y = make_data(100)
    path = tmp_path / "a.svm"
    dump_svmlight_file(X, y, path)
    src = SvmlightSource(str(path), piece_rows=25)
    X_in, y_in = source_rows(src)
    X_out, y_out = source_rows(src, [3, 1, 0, 2])
    rows = np.r_[75:100, 25:50, 0:25, 50:75]
    assert_same_rows(X_out, y_out, X_in[rows], y_in[rows])


def test_memory_url(tmp_path: Path) -> None:
    X, y = make_data()
    local = tmp_path / "a.svm"
    dump_svmlight_file(X, y, local)
    root = f"memory://svmlight-{uuid.uuid4().hex}"
    fs = fsspec.filesystem("memory")
    try:
        with fsspec.open(f"{root}/d/a.svm.gz", "wb", compression="gzip") as f:
            f.write(local.read_bytes())
        with fsspec.open(f"{root}/d/b.svm", "wb") as f:
            f.write(local.read_bytes())
        X_ref, y_ref = load_svmlight_file(str(local))
        one = SvmlightSource(f"{root}/d/b.svm", piece_rows=50)
        assert_same_rows(*source_rows(one), X_ref, y_ref)
        both = SvmlightSource(f"{root}/d", piece_rows=50)
        assert len(both.pieces) == 6 and "a.svm.gz lines 1-50" in both.pieces[0].label
        assert_same_rows(*source_rows(both), sp.vstack([X_ref, X_ref]), np.r_[y_ref, y_ref])
        again = pickle.loads(pickle.dumps(both))
        assert_same_rows(*source_rows(again), sp.vstack([X_ref, X_ref]), np.r_[y_ref, y_ref])
    finally:
        fs.rm(root.removeprefix("memory://"), recursive=True)


def test_n_features_given(tmp_path: Path) -> None:
    X, y = make_data()
    path = tmp_path / "a.svm"
    dump_svmlight_file(X, y, path, zero_based=False)
    wide = X.shape[1] + 7
    src = SvmlightSource(str(path), n_features=wide, zero_based=False)
    X_ref, y_ref = load_svmlight_file(str(path), n_features=wide, zero_based=False)
    assert src.n_features == wide
    assert_same_rows(*source_rows(src), X_ref, y_ref)


def test_labels_integral_and_fractional(tmp_path: Path) -> None:
    X, y = make_data()
    dump_svmlight_file(X, y - 1, tmp_path / "int.svm")
    src = SvmlightSource(str(tmp_path / "int.svm"))
    assert src.kinds == {"y": ColumnKind.INTEGER}
    np.testing.assert_array_equal(src.known_classes("y"), np.unique(y - 1))
    X, y = make_data(labels="float")
    dump_svmlight_file(X, y, tmp_path / "float.svm")
    src = SvmlightSource(str(tmp_path / "float.svm"))
    assert src.kinds == {"y": ColumnKind.NUMERIC}
    assert src.known_classes("y") is None
    np.testing.assert_array_equal(src.read_target(0, "y"),
                                  load_svmlight_file(str(tmp_path / "float.svm"))[1])


def test_many_integral_labels_have_no_known_classes(tmp_path: Path) -> None:
    path = tmp_path / "many.svm"
    path.write_text("".join(f"{k} 1:1\n" for k in range(svmlight.MAX_KNOWN_CLASSES + 1)))
    src = SvmlightSource(str(path))
    assert src.kinds == {"y": ColumnKind.INTEGER}
    assert src.known_classes("y") is None


def test_small_read_blocks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Lines cut by block boundaries (and lines longer than a block) are carried over."""
    monkeypatch.setattr(svmlight, "READ_BLOCK_BYTES", 37)
    X, y = make_data()
    path = tmp_path / "a.svm"
    dump_svmlight_file(X, y, path, comment="first\nsecond")
    with gzip.open(tmp_path / "a.svm.gz", "wb") as f:
        f.write(path.read_bytes())
    X_ref, y_ref = load_svmlight_file(str(path))
    for name in ("a.svm", "a.svm.gz"):
        src = SvmlightSource(str(tmp_path / name), piece_rows=17)
        assert_same_rows(*source_rows(src), X_ref, y_ref)
        # a compressed file's pieces share one reader: a pass reads them one at a time
        assert src.reads_pieces_concurrently == (name == "a.svm")
    bad = path.read_text().splitlines()
    bad[40] = bad[40] + " 3:x"
    path.write_text("\n".join(bad) + "\n")
    with pytest.raises(ReadError, match=r"a\.svm, line 41:"):
        SvmlightSource(str(path))


@pytest.mark.parametrize("workers", [1, 3])
def test_scan_cuts_pieces_where_a_line_count_does(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int) -> None:
    """Pieces cut by the scan, its blocks parsed by one thread or several, are the byte
    ranges that counting the text's row lines in Python gives: every ``piece_rows`` rows,
    blank and comment lines with the rows before them."""
    monkeypatch.setattr(svmlight, "READ_BLOCK_BYTES", 41)
    monkeypatch.setattr(svmlight, "scan_workers", lambda: workers)
    rng = np.random.default_rng(workers)
    lines = []
    for k in range(300):
        u = rng.random()
        lines.append("" if u < 0.05 else "# note" if u < 0.1 else
                     f"{' ' * (k % 3)}{k % 4} " + " ".join(
                         f"{j}:{rng.random():.3f}" for j in sorted(rng.choice(40, 1 + k % 6,
                                                                              replace=False)))
                     + (" # end" if k % 7 == 0 else ""))
    text = "\n".join(lines) + "\n"
    path = tmp_path / "a.svm"
    path.write_bytes(text.encode())
    row_lines, offset = [], 0
    for number, line in enumerate(text.splitlines(keepends=True), start=1):
        if line.strip() and not line.strip().startswith("#"):
            row_lines.append((number, offset))
        offset += len(line)
    src = SvmlightSource(str(path), piece_rows=13)
    expected = row_lines[::13]
    starts = [loc.start for loc in src._locations]
    assert starts == [o for _, o in expected]
    assert [loc.first_line for loc in src._locations] == [n for n, _ in expected]
    assert [loc.end for loc in src._locations] == [*starts[1:], len(text)]
    assert [p.n_rows for p in src.pieces] == [min(13, len(row_lines) - 13 * i)
                                              for i in range(len(expected))]
    X_ref, y_ref = load_svmlight_file(str(path), zero_based=True, n_features=40)
    assert_same_rows(*source_rows(src), X_ref, y_ref)


def test_columns_checked(tmp_path: Path) -> None:
    path = tmp_path / "a.svm"
    path.write_text("1 1:2\n")
    src = SvmlightSource(str(path))
    assert src.read_piece(0, [], None, None).y is None
    with pytest.raises(SchemaError, match="weight"):
        src.read_piece(0, [], "y", "w")
    with pytest.raises(SchemaError, match="label"):
        src.read_target(0, "z")


# ------------------------------------------------------------------ malformed input
GOOD = "# header\n1 1:1 2:2\n"  # the bad line below is line 3 of the file


@pytest.mark.parametrize(("line", "options", "problem"), [
    ("1 -1:2", {}, "not a non-negative integer"),
    ("1 a:2", {}, "not a non-negative integer"),
    ("1 1.5:2", {}, "not a non-negative integer"),
    ("1 0:2", {"zero_based": False}, "one-based"),
    ("1 9:2", {"n_features": 5}, "out of range for n_features=5"),
    ("1 1:x", {}, "value is not a number"),
    ("1 1:2.5.3", {}, "value is not a number"),
    ("1 1:nan", {}, "value is missing (NaN or infinite) at 'nan'"),
    ("1 1:-inf", {}, "pass nan_policy='drop'"),
    ("1 1:nanx", {}, "value is not a number"),
    ("1 1:1e39", {}, "beyond float32's range"),
    ("1 1:1e39", {"keep_missing": True}, "beyond float32's range"),
    ("1 3:1 1:2 3:4", {}, "index 3 appears twice"),
    ("3:1 4:2", {}, "no label"),
    ("abc 1:2", {}, "label is not a number"),
    ("inf 1:2", {}, "label is missing"),
    ("1e400 1:2", {"keep_missing": True}, "beyond float64's range"),
    ("1 1:2 5", {}, "without ':'"),
    ("1 qid:x 1:2", {}, "qid"),
    ("1 1:2 qid:3", {}, "a query id (qid:<int>) comes right after the label"),
    ("1 99999999999:1", {}, "too large"),
    ("1 " + " ".join(f"{k}:1" for k in range(1, 90)) + " 90:1x", {}, "number at '1x'"),
], ids=lambda v: v[:20] if isinstance(v, str) and " " in v else None)
def test_malformed_line(tmp_path: Path, line: str, options: dict, problem: str) -> None:
    path = tmp_path / "bad.svm"
    path.write_text(GOOD + line + "\n2 1:1\n")
    with pytest.raises(ReadError, match=r"bad\.svm, line 3:") as info:
        SvmlightSource(str(path), **options)
    assert problem in str(info.value)
    assert line[:20] in str(info.value)


def test_auto_zero_based_index_equal_to_n_features(tmp_path: Path) -> None:
    """With zero_based='auto', index n_features is valid in one-based text only."""
    path = tmp_path / "edge.svm"
    path.write_text("1 1:1\n1 5:1\n1 0:1\n")
    with pytest.raises(ReadError, match=r"edge\.svm, line 2: feature index 5 is out of range"):
        SvmlightSource(str(path), n_features=5)
    path.write_text("1 1:1\n1 5:1\n")
    assert SvmlightSource(str(path), n_features=5).zero_based is False


@pytest.mark.parametrize("suffix", [".gz", ".bz2", ".xz"])
def test_truncated_compressed_file(tmp_path: Path, suffix: str) -> None:
    X, y = make_data(300)
    plain = tmp_path / "a.svm"
    dump_svmlight_file(X, y, plain)
    packed = tmp_path / f"cut.svm{suffix}"
    with OPENERS[suffix](packed, "wb") as f:
        f.write(plain.read_bytes())
    data = packed.read_bytes()
    packed.write_bytes(data[: len(data) - 40])
    with pytest.raises(ReadError, match=rf"cut\.svm\{suffix}.*truncated or corrupt"):
        SvmlightSource(str(packed))


def test_missing_path(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="no such file"):
        SvmlightSource(str(tmp_path / "nope.svm"))


# ------------------------------------------------------------------ the kernel
def reference_parse(text: str):
    """Plain Python parse of svmlight text: labels, indptr, indices, values, lines."""
    labels, indptr, indices, values, lines = [], [0], [], [], []
    for number, line in enumerate(text.split("\n")):
        tokens = line.split("#")[0].split()
        if not tokens:
            continue
        labels.append(float(tokens[0]))
        for token in tokens[1:]:
            key, value = token.split(":")
            if key != "qid":
                indices.append(int(key))
                values.append(np.float32(float(value)))
        indptr.append(len(indices))
        lines.append(number)
    return (np.array(labels), np.array(indptr), np.array(indices, dtype=np.int32),
            np.array(values, dtype=np.float32), np.array(lines))


def test_kernel_against_reference() -> None:
    text = ("3 qid:1 2:0.5 0:-1e-3 7:12\n\n# only a comment\n-1.5 1:.25\t4:+3E2 # c\r\n"
            "0\n2 5:1.0000001 6:-0 3:123456789012345678901234\n1 2:7")
    buf = np.frombuffer(text.encode(), dtype=np.uint8)
    labels = np.empty(8)
    indptr = np.zeros(9, dtype=np.int64)
    indices = np.empty(16, dtype=np.int32)
    values = np.empty(16, dtype=np.float32)
    row_line = np.empty(8, dtype=np.int64)
    ref = reference_parse(text)

    # two rows, then the rest: the second call continues where the first stopped
    status, pos, line, _, n, nnz, first, _ = parse_svmlight_lines(
        buf, 0, len(buf), 2, 0, 100, 0, 0, 0, labels, indptr, indices, values, row_line)
    assert (status, n, nnz, first, line) == (0, 2, 5, 0, 4)
    assert text[pos:].startswith("0\n")
    status, pos, line, _, n, nnz, first, _ = parse_svmlight_lines(
        buf, pos, len(buf), 8, 0, 100, 0, n, line, labels, indptr, indices, values, row_line)
    assert (status, pos, n, nnz) == (0, len(buf), 5, ref[1][-1])
    assert first == text.index("0\n")
    for got, want in zip((labels[:n], indptr[: n + 1], indices[:nnz], values[:nnz],
                          row_line[:n]), ref, strict=True):
        np.testing.assert_array_equal(got, want)

    # one-based shift and a bad value: error code, its line and the offending token
    status, pos, line, line_start, n, *_ = parse_svmlight_lines(
        buf, 0, len(buf), 8, 1, 100, 1, 0, 0, labels, indptr, indices, values, row_line)
    assert status == svmlight.ERR_INDEX_RANGE and line == 0 and n == 0
    assert text[pos:].startswith("0:-1e-3")
    bad = np.frombuffer(b"1 1:2\n1 2:3x\n", dtype=np.uint8)
    status, pos, line, line_start, n, *_ = parse_svmlight_lines(
        bad, 0, len(bad), 8, 0, 100, 0, 0, 0, labels, indptr, indices, values, row_line)
    assert (status, line, line_start, n, bytes(bad[pos:pos + 2])) == (
        svmlight.ERR_VALUE, 1, 6, 1, b"3x")


def test_score_and_evaluate_of_a_path_read_it_as_the_training_file_was(tmp_path: Path) -> None:
    """A zero-based test file in which index 0 never appears would be read one-based by
    the "auto" rule, every column shifted by one; ``score(path)`` and ``evaluate(model,
    path)`` read it with the model's index base and feature count, and score what the
    same rows score in memory."""
    from streamlearn import evaluate
    from streamlearn.models import AdditiveSVC

    rng = np.random.default_rng(0)
    X = rng.random((600, 4))
    y = (X[:, 1] > 0.5).astype(int)
    sklearn_dump(X, y, str(tmp_path / "train.svm"), zero_based=True)
    Xt = rng.random((400, 4))
    Xt[:, 0] = 0.0
    yt = (Xt[:, 1] > 0.5).astype(int)
    sklearn_dump(Xt, yt, str(tmp_path / "test.svm"), zero_based=True)
    model = AdditiveSVC(interactions=0).fit(str(tmp_path / "train.svm"))
    assert model.svmlight_zero_based_
    in_memory = model.score(sp.csr_matrix(Xt), yt)
    assert in_memory > 0.95
    assert model.score(str(tmp_path / "test.svm")) == pytest.approx(in_memory)
    assert evaluate(model, str(tmp_path / "test.svm"))["accuracy"] == pytest.approx(in_memory)


def test_a_directory_of_svmlight_files_is_read_as_svmlight(tmp_path: Path) -> None:
    """Named .svm, or named otherwise with svmlight lines inside: the directory's files
    are svmlight text (not parquet, the guess for directories of unknown files)."""
    from streamlearn import open_dataset

    rng = np.random.default_rng(1)
    X = rng.random((40, 3))
    y = (X[:, 0] > 0.5).astype(int)
    for name, suffix in (("named", ".svm"), ("unnamed", ".txt")):
        (tmp_path / name).mkdir()
        sklearn_dump(X[:20], y[:20], str(tmp_path / name / f"a{suffix}"), zero_based=True)
        sklearn_dump(X[20:], y[20:], str(tmp_path / name / f"b{suffix}"), zero_based=True)
        ds = open_dataset(str(tmp_path / name))
        assert ds.is_sparse and ds.n_rows == 40
        got = sp.vstack([sp.csr_matrix((c.X.values, c.X.indices, c.X.indptr),
                                       shape=(c.X.shape[0], 3)) for c in ds.chunks()])
        np.testing.assert_allclose(got.toarray(), X.astype(np.float32), rtol=1e-6)


@pytest.mark.parametrize("text", ["", "# only a comment\n\n"], ids=["empty", "comments"])
def test_a_file_without_rows_says_so(tmp_path: Path, text: str) -> None:
    path = tmp_path / "none.svm"
    path.write_text(text)
    with pytest.raises(ReadError, match="none.svm holds no rows"):
        open_dataset(str(path))


# ------------------------------------------------------------------ missing values
MISSING_TEXT = ("1 1:0.5 3:2\n0 2:nan\n1 1:1 3:-inf # comment\n0 2:4 3:1\n\nNaN 1:3\n"
                "1 2:Infinity 3:7\n0 1:-2.5\n2 3:1e-3\n")


def _reference_with_missing(path: Path) -> tuple[sp.csr_matrix, np.ndarray, np.ndarray]:
    """scikit-learn's reading of the text, and which rows hold a NaN or infinity."""
    X, y = load_svmlight_file(str(path))
    X = sp.csr_matrix(X)
    row_of_entry = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
    bad = np.zeros(X.shape[0], dtype=bool)
    bad[row_of_entry[~np.isfinite(X.data)]] = True
    bad |= ~np.isfinite(y)
    return X, y, bad


def test_nan_policy_drop_drops_the_rows_scikit_learn_reads_as_missing(tmp_path: Path) -> None:
    path = tmp_path / "m.svm"
    path.write_text(MISSING_TEXT)
    X_ref, y_ref, bad = _reference_with_missing(path)
    assert bad.tolist() == [False, True, True, False, True, True, False, False]
    ds = open_dataset(str(path), nan_policy="drop", chunk_rows=3)
    assert ds.n_rows == 8 and ds.schema.n_rows == 8  # the dropped rows counted, as stored
    assert ds.task == "classification"
    np.testing.assert_array_equal(ds.classes, np.unique(y_ref[~bad]))
    chunks = list(ds.chunks())
    rows = np.concatenate([c.start + np.arange(c.X.n_rows) if c.index is None else c.index
                           for c in chunks])
    np.testing.assert_array_equal(rows, np.flatnonzero(~bad))
    X = sp.csr_matrix(SparseRows.concatenate([c.X for c in chunks]).to_scipy())
    X.sort_indices()
    assert_same_rows(X, ds.classes[np.concatenate([c.y for c in chunks])],
                     X_ref[~bad], y_ref[~bad])


def test_nan_policy_fill_fills_values_and_refuses_a_missing_label(tmp_path: Path) -> None:
    path = tmp_path / "m.svm"
    path.write_text(MISSING_TEXT.replace("NaN 1:3\n", "1 1:3\n"))
    X_ref, y_ref, _ = _reference_with_missing(path)
    X_ref.data[~np.isfinite(X_ref.data)] = -7.0
    ds = open_dataset(str(path), nan_policy=-7.0)
    chunks = list(ds.chunks())
    X = sp.csr_matrix(SparseRows.concatenate([c.X for c in chunks]).to_scipy())
    X.sort_indices()
    assert_same_rows(X, ds.classes[np.concatenate([c.y for c in chunks])], X_ref, y_ref)
    path.write_text(MISSING_TEXT)  # a missing label: nothing stands in for it
    with pytest.raises(DataError, match=r"target 'y' is nan at row 4 of .*m\.svm"):
        list(open_dataset(str(path), nan_policy=-7.0).chunks())


def test_nan_policy_raise_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "m.svm"
    path.write_text(MISSING_TEXT)
    with pytest.raises(ReadError, match=r"m\.svm, line 2: the feature value is missing .* "
                                        r"pass nan_policy='drop'"):
        open_dataset(str(path))
    path.write_text("1 1:2\n\n-inf 2:1\n")
    with pytest.raises(ReadError, match=r"m\.svm, line 3: the label is missing"):
        open_dataset(str(path), nan_policy="raise")


def test_hashed_rows_with_missing_values(tmp_path: Path) -> None:
    """A NaN summed with another entry of its column keeps the row missing (dropped), and a
    row without one is hashed as the text without the missing rows is."""
    path = tmp_path / "m.svm"
    path.write_text("1 a:1 b:nan\n0 a:2 a:3\n1 c:inf c:-inf\n")
    kept = tmp_path / "k.svm"
    kept.write_text("0 a:2 a:3\n")
    ds = open_dataset(str(path), nan_policy="drop", hash_features=2,
                      task="regression")  # every name collides
    (chunk,) = ds.chunks()
    (ref,) = open_dataset(str(kept), hash_features=2, task="regression").chunks()
    np.testing.assert_array_equal(chunk.index, [1])
    np.testing.assert_array_equal(chunk.X.indices, ref.X.indices)
    np.testing.assert_array_equal(chunk.X.values, ref.X.values)
    assert abs(float(ref.X.values[0])) == 5.0
