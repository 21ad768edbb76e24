"""Run every benchmark in ``bench/`` and write ``bench/REPORT.md`` from their JSON results.

A benchmark is a script ``bench/NAME.py`` that accepts ``--quick`` (helpers such as
``machine_info.py`` are not benchmarks). Each runs in its own process group, one after
the other (so they do not compete for cores), with ``--quick`` unless ``--full`` is given
and with ``--out DIR`` when it accepts that option, under a time limit; its output goes to
``DIR/logs/NAME.log``. The report is then built from every ``DIR/*.json``: the machine and
library versions, a table of the runs, and one section per result file with its tables
and plots, following the convention in ``bench/README.md``.

Run ``python bench/run_all.py`` (quick sizes, results in ``bench/results/quick/``; this is
``make bench``) or ``--full`` (full sizes, results in ``bench/results/``). ``--only NAME``
runs some benchmarks; ``--report-only`` rebuilds the report from the results there.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
RESULTS_DIR = BENCH_DIR / "results"
QUICK_DIR = RESULTS_DIR / "quick"
REPORT = BENCH_DIR / "REPORT.md"

#: Scripts in bench/ that are not benchmarks even if they mention ``--quick``.
HELPERS = frozenset({"run_all", "machine_info", "pyramid_hog"})
#: Seconds all benchmarks together may take (``make bench`` promises under 30 minutes).
TOTAL_BUDGET_S = 28 * 60
#: Seconds one benchmark may take.
SCRIPT_TIMEOUT_S = 15 * 60
#: Top-level keys of a result file the report shows elsewhere or not at all.
META_KEYS = frozenset({"benchmark", "title", "summary", "table", "tables", "plots", "machine",
                       "versions", "total_runtime_s"})
#: Rows shown per table when a result file has no tables of its own.
FALLBACK_ROWS = 24
LOG_TAIL_LINES = 15


@dataclass
class Run:
    """One benchmark run: how it ended and where its output is."""

    name: str
    status: str  # "ok", "failed", "timed out", "skipped"
    seconds: float
    log: Path | None = None
    returncode: int | None = None


# ----------------------------------------------------------------------------- running
def discover(bench_dir: Path = BENCH_DIR) -> list[Path]:
    """Benchmark scripts: ``bench/*.py`` with a ``--quick`` option, helpers excluded."""
    scripts = []
    for path in sorted(bench_dir.glob("*.py")):
        if path.stem in HELPERS or path.stem.startswith("_"):
            continue
        if '"--quick"' in path.read_text(encoding="utf-8"):
            scripts.append(path)
    return scripts


def accepts_out(script: Path) -> bool:
    """Whether the script has an ``--out DIR`` option (results directory)."""
    return '"--out"' in script.read_text(encoding="utf-8")


def run_script(script: Path, out_dir: Path, *, quick: bool, timeout_s: float) -> Run:
    """Run one benchmark in its own process group, output to ``out_dir/logs/NAME.log``."""
    name = script.stem
    log_dir = out_dir / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    log = log_dir / f"{name}.log"
    command = [sys.executable, str(script), *(["--quick"] if quick else [])]
    if accepts_out(script):
        command += ["--out", str(out_dir)]
    started = time.perf_counter()
    stamp = time.time()
    with log.open("w", encoding="utf-8") as sink:
        sink.write(f"$ {' '.join(command)}\n")
        sink.flush()
        proc = subprocess.Popen(command, cwd=REPO_DIR, stdout=sink, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            returncode = proc.wait(timeout=timeout_s)
            status = "ok" if returncode == 0 else "failed"
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the script and what it started
            proc.wait()
            returncode, status = None, "timed out"
    if not accepts_out(script) and out_dir != RESULTS_DIR:
        collect_new_results(RESULTS_DIR, out_dir, name, since=stamp)
    return Run(name, status, time.perf_counter() - started, log, returncode)


def collect_new_results(source: Path, out_dir: Path, name: str, *, since: float) -> None:
    """Copy ``NAME*.json``/``.png`` written since ``since`` by a script without ``--out``."""
    for path in source.glob(f"{name}*"):
        if path.suffix in (".json", ".png") and path.stat().st_mtime >= since:
            shutil.copy2(path, out_dir / path.name)


def run_all(scripts: list[Path], out_dir: Path, *, quick: bool, budget_s: float,
            timeout_s: float) -> list[Run]:
    """Run the scripts one after the other within ``budget_s`` seconds in all."""
    runs = []
    deadline = time.perf_counter() + budget_s
    for script in scripts:
        left = deadline - time.perf_counter()
        if left < 10:
            runs.append(Run(script.stem, "skipped", 0.0))
            log(f"{script.stem}: skipped (time budget spent)")
            continue
        log(f"{script.stem} ...")
        run = run_script(script, out_dir, quick=quick, timeout_s=min(timeout_s, left))
        log(f"{script.stem}: {run.status} in {run.seconds:.0f} s (log: {run.log})")
        runs.append(run)
    return runs


# ---------------------------------------------------------------------------- rendering
def format_cell(value: Any) -> str:
    """A table cell: numbers shortened to 4 significant digits, None as a dash."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        if value != 0 and (abs(value) >= 1e4):
            return f"{value:,.0f}"
        if value != 0 and abs(value) < 1e-3:
            return f"{value:.2e}"
        return f"{value:.4g}"
    if isinstance(value, list | tuple):
        return ", ".join(format_cell(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k}: {format_cell(v)}" for k, v in value.items())
    return str(value)


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_table(columns: list[Any], rows: Iterable[list[Any]]) -> str:
    """A GitHub markdown table."""
    head = "| " + " | ".join(_escape(str(c)) for c in columns) + " |"
    rule = "|" + "---|" * len(columns)
    body = ["| " + " | ".join(_escape(format_cell(v)) for v in row) + " |" for row in rows]
    return "\n".join([head, rule, *body])


def declared_tables(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The tables a result file declares (``table`` and/or ``tables``), checked."""
    tables = [report["table"]] if isinstance(report.get("table"), dict) else []
    tables += [t for t in report.get("tables") or [] if isinstance(t, dict)]
    return [t for t in tables if isinstance(t.get("columns"), list)
            and isinstance(t.get("rows"), list)]


def render_declared(table: dict[str, Any]) -> str:
    """One declared table with its optional title and notes."""
    parts = []
    if table.get("title"):
        parts.append(f"**{table['title']}**\n")
    parts.append(markdown_table(table["columns"], table["rows"]))
    if table.get("notes"):
        parts.append(f"\n{table['notes']}")
    return "\n".join(parts)


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def render_fallback(report: dict[str, Any]) -> str:
    """A compact rendering of a result file that declares no tables.

    Scalars become a list; a list of flat records becomes a table of their scalar fields
    (the first rows); a record becomes a list of its scalar fields. Deeper structure is
    left to the JSON file.
    """
    lines: list[str] = []
    scalars = [(k, v) for k, v in report.items() if k not in META_KEYS and _is_scalar(v)]
    lines += [f"- {k}: {format_cell(v)}" for k, v in scalars]
    for key, value in report.items():
        if key in META_KEYS or _is_scalar(value):
            continue
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            columns = [c for c in dict.fromkeys(k for v in value for k in v)
                       if all(_is_scalar(v.get(c)) for v in value)]
            if columns:
                shown = value[:FALLBACK_ROWS]
                more = (f"\n\n({len(value) - len(shown)} more rows in the JSON file)"
                        if len(value) > len(shown) else "")
                lines.append(f"\n**{key}**\n\n"
                             + markdown_table(columns, [[v.get(c) for c in columns]
                                                        for v in shown]) + more)
                continue
        if isinstance(value, dict):
            flat = [(k, v) for k, v in value.items()
                    if _is_scalar(v) or (isinstance(v, list) and all(map(_is_scalar, v)))]
            if flat:
                lines.append(f"\n**{key}**\n")
                lines += [f"- {k}: {_escape(format_cell(v))}" for k, v in flat]
                continue
        if isinstance(value, list) and all(map(_is_scalar, value)):
            lines.append(f"- {key}: {format_cell(value)}")
    return "\n".join(lines)


def plots_of(name: str, report: dict[str, Any], results_dir: Path) -> list[Path]:
    """PNG files of a result: those the file names in ``plots``, else ``NAME*.png``."""
    named = report.get("plots")
    if isinstance(named, list):
        return [results_dir / p for p in named if (results_dir / p).exists()]
    return sorted(results_dir.glob(f"{name}*.png"))


def machine_section(reports: dict[str, dict[str, Any]]) -> str:
    """The machine of the runs and every library version any result recorded."""
    machines = [r["machine"] for r in reports.values() if isinstance(r.get("machine"), dict)]
    lines = ["## Machine and versions", ""]
    if machines:
        m = machines[0]
        keys = [k for k in ("cpu_model", "usable_cores", "logical_cores", "physical_cores",
                            "ram_gib", "platform") if k in m]
        lines.append(markdown_table(["machine", ""], [[k, m[k]] for k in keys]))
        loads = [[name, r["machine"].get("load_average_1m")] for name, r in reports.items()
                 if isinstance(r.get("machine"), dict)]
        lines += ["", "Load average (1 min) when each benchmark started; other work running "
                  "on the machine makes timings noisy:", "",
                  markdown_table(["benchmark", "load"], loads)]
    versions: dict[str, set[str]] = {}
    for r in reports.values():
        for lib, v in (r.get("versions") or {}).items():
            versions.setdefault(lib, set()).add("-" if v is None else str(v))
    if versions:
        lines += ["", markdown_table(["library", "version"],
                                     [[lib, ", ".join(sorted(vs))]
                                      for lib, vs in sorted(versions.items())])]
    return "\n".join(lines)


def benchmark_section(name: str, report: dict[str, Any], results_dir: Path,
                      report_path: Path, run: Run | None) -> str:
    """One benchmark: title, summary, tables (or the fallback), plots, and its run."""
    title = report.get("title") or name.replace("_", " ")
    script = BENCH_DIR / f"{report.get('benchmark', name)}.py"
    lines = [f"## {title}", ""]
    source = (f"`bench/{script.name}`" if script.exists() else f"`{name}`")
    where = os.path.relpath(results_dir / f"{name}.json", report_path.parent)
    meta = [f"script {source}", f"results [`{name}.json`]({where})"]
    if isinstance(report.get("total_runtime_s"), int | float):
        meta.append(f"ran {report['total_runtime_s']:.0f} s")
    if run is not None and run.status != "ok":
        meta.append(f"**this run: {run.status}** (older results shown)")
    lines += ["; ".join(meta), ""]
    if report.get("summary"):
        lines += [str(report["summary"]), ""]
    tables = declared_tables(report)
    if tables:
        for table in tables:
            lines += [render_declared(table), ""]
    else:
        lines += [render_fallback(report), ""]
    for png in plots_of(name, report, results_dir):
        rel = os.path.relpath(png, report_path.parent)
        lines += [f"![{png.stem}]({rel})", ""]
    return "\n".join(lines)


def failure_section(run: Run) -> str:
    """A benchmark that left no results: how it ended and the end of its log."""
    tail = ""
    if run.log is not None and run.log.exists():
        tail = "\n".join(run.log.read_text(encoding="utf-8", errors="replace")
                         .splitlines()[-LOG_TAIL_LINES:])
    ended = run.status + (f" (exit code {run.returncode})" if run.returncode else "")
    return (f"## {run.name}\n\nNo results file. Run: {ended}, {run.seconds:.0f} s; end of its "
            f"log:\n\n```\n{tail}\n```\n")


def load_results(results_dir: Path) -> dict[str, dict[str, Any]]:
    """Every ``*.json`` result file of a directory, by file stem (unreadable ones noted)."""
    reports = {}
    for path in sorted(results_dir.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            data = {"error": f"unreadable result file: {exc}"}
        reports[path.stem] = data if isinstance(data, dict) else {"value": data}
    return reports


def build_report(results_dir: Path, report_path: Path, runs: list[Run], *,
                 command: str) -> str:
    """The markdown of ``REPORT.md`` from the results in ``results_dir``."""
    reports = load_results(results_dir)
    by_name = {r.name: r for r in runs}
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = ["# Benchmark report", "",
             f"Written by `{command}` on {now} from the results in "
             f"`{os.path.relpath(results_dir, REPO_DIR)}/`. Each benchmark script documents "
             "what it measures in its docstring; `bench/README.md` explains the scripts and "
             "this report.", ""]
    if runs:
        lines += ["| benchmark | status | seconds | log |", "|---|---|---|---|"]
        for r in runs:
            log_link = (f"[log]({os.path.relpath(r.log, report_path.parent)})"
                        if r.log is not None else "-")
            lines.append(f"| {r.name} | {r.status} | {r.seconds:.0f} | {log_link} |")
        lines.append("")
    lines += [machine_section(reports), ""]
    for name, report in reports.items():
        lines.append(benchmark_section(name, report, results_dir, report_path,
                                       by_name.get(name)))
    lines += [failure_section(r) for r in runs if r.name not in reports]
    return "\n".join(lines).rstrip() + "\n"


def log(message: str) -> None:
    """Progress on stderr."""
    print(message, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    """Command line entry point; returns the exit code (1 if a benchmark failed)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--full", action="store_true",
                        help="full sizes (default: each script's --quick size)")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="benchmarks to run")
    parser.add_argument("--report-only", action="store_true",
                        help="only rebuild the report from the results directory")
    parser.add_argument("--out", type=Path,
                        help="results directory (default bench/results/quick, or "
                             "bench/results with --full)")
    parser.add_argument("--report", type=Path, default=REPORT, help="report file")
    parser.add_argument("--budget", type=float, default=TOTAL_BUDGET_S,
                        help="seconds for all benchmarks together")
    parser.add_argument("--timeout", type=float, default=SCRIPT_TIMEOUT_S,
                        help="seconds for one benchmark")
    args = parser.parse_args(argv)
    out_dir = (args.out or (RESULTS_DIR if args.full else QUICK_DIR)).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    runs: list[Run] = []
    if not args.report_only:
        scripts = discover()
        if args.only:
            wanted = {re.sub(r"\.py$", "", n) for n in args.only}
            unknown = wanted - {s.stem for s in scripts}
            if unknown:
                parser.error(f"no benchmark named {', '.join(sorted(unknown))}; benchmarks: "
                             f"{', '.join(s.stem for s in scripts)}")
            scripts = [s for s in scripts if s.stem in wanted]
        log(f"benchmarks: {', '.join(s.stem for s in scripts)}; results in {out_dir}")
        runs = run_all(scripts, out_dir, quick=not args.full, budget_s=args.budget,
                       timeout_s=args.timeout)
    command = " ".join(["python bench/run_all.py", *(argv if argv is not None else sys.argv[1:])])
    text = build_report(out_dir, args.report.resolve(), runs, command=command)
    args.report.write_text(text, encoding="utf-8")
    log(f"report written to {args.report}")
    return 1 if any(r.status in ("failed", "timed out") for r in runs) else 0


if __name__ == "__main__":
    sys.exit(main())
