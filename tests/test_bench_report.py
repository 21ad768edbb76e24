"""``bench/run_all.py``: the report built from result files, and how failed runs show.

Result files and benchmark scripts here are small fakes written to a temporary directory;
no real benchmark runs.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
import textwrap
import time
from pathlib import Path
from types import ModuleType

import pytest

BENCH_DIR = Path(__file__).resolve().parents[1] / "bench"


@pytest.fixture(scope="module")
def run_all() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_run_all", BENCH_DIR / "run_all.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


MACHINE = {"cpu_model": "Test CPU 3000", "usable_cores": 2, "ram_gib": 24.0,
           "platform": "Linux-test", "load_average_1m": 1.25}
MODEL_RESULT = {
    "benchmark": "toy_model",
    "machine": MACHINE,
    "versions": {"numpy": "9.9.9", "streamlearn": "0.1.0"},
    "settings": {"sizes": [1000, 2000]},
    "results": [{"method": "ours", "n": 1000, "accuracy": 0.91}],
    "total_runtime_s": 42.4,
    "title": "Toy model against its peer",
    "summary": "Ours against the peer on the toy problem.",
    "tables": [
        {"title": "Accuracy and speed", "columns": ["method", "rows", "accuracy", "Mrows/s"],
         "rows": [["ours", 1000, 0.9134, 2.5], ["peer | sklearn", 1000, 0.8871, None]],
         "notes": "Peer timed in the same run."},
        {"columns": ["size", "peak RSS MiB"], "rows": [[1000, 120.0], [2000, 121.5]]},
    ],
    "plots": ["toy_model.png"],
}
PLAIN_RESULT = {
    "benchmark": "plain",
    "machine": {**MACHINE, "load_average_1m": 0.5},
    "versions": {"numpy": "9.9.9", "pyarrow": "1.2.3"},
    "rows_per_s": 123456.0,
    "format": "zarr",
    "points": [{"n": 10, "seconds": 0.5, "nested": {"a": 1}}, {"n": 20, "seconds": 1.0}],
}


def write_results(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "toy_model.json").write_text(json.dumps(MODEL_RESULT))
    (directory / "toy_model.png").write_bytes(b"\x89PNG fake")
    (directory / "plain.json").write_text(json.dumps(PLAIN_RESULT))
    (directory / "plain.png").write_bytes(b"\x89PNG fake")
    (directory / "broken.json").write_text("{not json")


def table_rows(markdown: str, header_start: str) -> list[list[str]]:
    """Cells of the markdown table whose header line starts with ``header_start``."""
    lines = markdown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header_start))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = re.split(r"(?<!\\)\|", line.strip()[1:-1])
        rows.append([c.strip() for c in cells])
    return rows


def section(markdown: str, heading: str) -> str:
    """Text of the ``## heading`` section up to the next one."""
    text = markdown.split(f"## {heading}\n", 1)[1]
    return text.split("\n## ", 1)[0]


def test_report_renders_declared_tables_and_plots(run_all, tmp_path):
    results = tmp_path / "results"
    write_results(results)
    report_path = tmp_path / "REPORT.md"
    text = run_all.build_report(results, report_path, [], command="python bench/run_all.py")

    model = section(text, "Toy model against its peer")
    assert "Ours against the peer on the toy problem." in model
    assert "[`toy_model.json`](results/toy_model.json)" in model
    assert "ran 42 s" in model
    assert "**Accuracy and speed**" in model and "Peer timed in the same run." in model
    rows = table_rows(model, "| method | rows | accuracy | Mrows/s |")
    # 4 significant digits, thousands separators, None as a dash, "|" escaped in a cell.
    assert rows == [["ours", "1,000", "0.9134", "2.5"],
                    [r"peer \| sklearn", "1,000", "0.8871", "-"]]
    assert table_rows(model, "| size | peak RSS MiB |") == [["1,000", "120"], ["2,000", "121.5"]]
    # The plot the file names is linked relative to the report; plain.png is not its plot.
    assert "![toy_model](results/toy_model.png)" in model
    assert "plain.png" not in model
    for link in re.findall(r"\]\(([^)]+)\)", text):
        if not link.startswith("http"):
            assert (report_path.parent / link).exists(), link


def test_report_without_tables_falls_back_to_fields(run_all, tmp_path):
    results = tmp_path / "results"
    write_results(results)
    text = run_all.build_report(results, tmp_path / "REPORT.md", [], command="x")
    plain = section(text, "plain")
    assert "- rows_per_s: 123,456" in plain
    assert "- format: zarr" in plain
    # Records become a table of their scalar fields (the nested one is left to the JSON).
    assert table_rows(plain, "| n | seconds |") == [["10", "0.5"], ["20", "1"]]
    assert "![plain](results/plain.png)" in plain  # NAME*.png found without a plots key
    assert "unreadable result file" in section(text, "broken")


def test_machine_and_versions_merge_across_results(run_all, tmp_path):
    results = tmp_path / "results"
    write_results(results)
    text = run_all.build_report(results, tmp_path / "REPORT.md", [], command="x")
    machine = section(text, "Machine and versions")
    assert "| cpu_model | Test CPU 3000 |" in machine
    assert dict(map(tuple, table_rows(machine, "| benchmark | load |"))) == {
        "plain": "0.5", "toy_model": "1.25"}
    assert dict(map(tuple, table_rows(machine, "| library | version |"))) == {
        "numpy": "9.9.9", "pyarrow": "1.2.3", "streamlearn": "0.1.0"}


FAKE_SCRIPTS = {
    "good.py": """
        import argparse, json, pathlib
        p = argparse.ArgumentParser()
        p.add_argument("--quick", action="store_true")
        p.add_argument("--out", type=pathlib.Path)
        a = p.parse_args()
        print("measuring, quick =", a.quick)
        (a.out / "good.json").write_text(json.dumps({
            "benchmark": "good", "title": "Good benchmark", "quick": a.quick,
            "tables": [{"columns": ["k"], "rows": [[7]]}]}))
    """,
    "crashes.py": """
        import sys
        if "--quick" in sys.argv:
            print("reading the store")
            raise SystemExit("ReadError: store is gone")
    """,
    "sleeps.py": """
        import sys, time
        if "--quick" in sys.argv:
            print("started", flush=True)
            time.sleep(60)
    """,
    "stale.py": """
        import sys
        if "--quick" in sys.argv and "--out" in sys.argv:
            sys.exit(3)
    """,
    "machine_info.py": '"--quick" helpers are not benchmarks',
    "notabench.py": "print('no quick option here')",
}


def write_scripts(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name, source in FAKE_SCRIPTS.items():
        (directory / name).write_text(textwrap.dedent(source))


def test_discover_skips_helpers_and_scripts_without_quick(run_all, tmp_path):
    write_scripts(tmp_path)
    found = [p.name for p in run_all.discover(tmp_path)]
    assert found == ["crashes.py", "good.py", "sleeps.py", "stale.py"]


def test_failed_and_timed_out_runs_appear_in_the_report(run_all, tmp_path):
    bench = tmp_path / "bench"
    out = tmp_path / "out"
    write_scripts(bench)
    out.mkdir()
    # Older results of "stale" exist: they are shown, marked as not from this run.
    (out / "stale.json").write_text(json.dumps(
        {"benchmark": "stale", "title": "Stale benchmark",
         "tables": [{"columns": ["v"], "rows": [[1.5]]}]}))
    scripts = run_all.discover(bench)
    started = time.perf_counter()
    runs = run_all.run_all(scripts, out, quick=True, budget_s=60, timeout_s=3)
    assert time.perf_counter() - started < 30  # the sleeper was killed, not waited for
    status = {r.name: (r.status, r.returncode) for r in runs}
    assert status == {"crashes": ("failed", 1), "good": ("ok", 0),
                      "sleeps": ("timed out", None), "stale": ("failed", 3)}
    assert "measuring, quick = True" in (out / "logs" / "good.log").read_text()

    report_path = tmp_path / "REPORT.md"
    text = run_all.build_report(out, report_path, runs, command="python bench/run_all.py")
    runs_table = {r[0]: r[1] for r in table_rows(text, "| benchmark | status |")}
    assert runs_table == {"crashes": "failed", "good": "ok", "sleeps": "timed out",
                          "stale": "failed"}
    assert "[log](out/logs/sleeps.log)" in text

    good = section(text, "Good benchmark")
    assert table_rows(good, "| k |") == [["7"]]
    assert "this run" not in good
    stale = section(text, "Stale benchmark")
    assert "**this run: failed** (older results shown)" in stale
    assert table_rows(stale, "| v |") == [["1.5"]]

    crashed = section(text, "crashes")
    assert "No results file. Run: failed (exit code 1)" in crashed
    assert "ReadError: store is gone" in crashed  # the end of its log
    slept = section(text, "sleeps")
    assert "No results file. Run: timed out" in slept and "started" in slept


def test_budget_spent_skips_the_rest(run_all, tmp_path):
    write_scripts(tmp_path)
    scripts = [p for p in run_all.discover(tmp_path) if p.stem in ("good", "stale")]
    runs = run_all.run_all(scripts, tmp_path / "out", quick=True, budget_s=5, timeout_s=5)
    assert [(r.name, r.status) for r in runs] == [("good", "skipped"), ("stale", "skipped")]
    text = run_all.build_report(tmp_path / "out", tmp_path / "R.md", runs, command="x")
    assert "No results file. Run: skipped, 0 s" in section(text, "good")


def test_report_only_command_line(run_all, tmp_path):
    results = tmp_path / "results"
    write_results(results)
    report_path = tmp_path / "REPORT.md"
    code = run_all.main(["--report-only", "--out", str(results), "--report", str(report_path)])
    assert code == 0
    text = report_path.read_text()
    assert text.startswith("# Benchmark report\n")
    assert "Written by `python bench/run_all.py --report-only --out" in text
    assert "| benchmark | status |" not in text  # nothing ran
    assert "## Toy model against its peer" in text and "## plain" in text
