"""Fit times of the defaults: ShareBoost, MixtureSVC, AdditiveSVC, SparseJSBoost.

Each case fits one model on the provided training split of one dataset and reports the
fit's seconds, its test error and the ``ConvergenceWarning`` s it raised, beside the peer a
user would otherwise pick on the same rows:

- ``ShareBoostClassifier(features="stumps", n_rounds=100)`` on letter and shuttle, against
  LightGBM (``LGBMClassifier``, 100 trees) and scikit-learn's
  ``HistGradientBoostingClassifier``;
- ``MixtureSVC()`` on usps and letter, against ``LinearSVC()`` (its defaults, which may stop
  at their iteration cap with a ``ConvergenceWarning``, counted);
- ``ShareBoostClassifier()`` on a9a and adult, against ``LinearSVC()``, on all of MNIST,
  against ``SGDClassifier()`` (``LinearSVC()``'s defaults ran for more than 12 minutes
  there without finishing), and on pendigits and satimage, where it keeps anchors, against
  LightGBM and ``LinearSVC()``;
- ``AdditiveSVC()`` on usps, ijcnn1, adult and satimage, against ``LinearSVC()``;
- ``SparseJSBoostClassifier()`` on adult (108 columns, most of them one-hot: its direction
  search scores 21 offsets of every column each step), against LightGBM and
  ``LinearSVC()``.

Every fit runs in a fresh process after an untimed warm-up fit of the same model on the
same rows (so the kernels are compiled and cached, as after the first use, and loaded in
the process: small data takes numpy paths where larger data calls a kernel, so a fit on
fewer rows would leave some of them out) with every thread pool held to the machine's
cores. With ``--baseline DIR`` (a checkout of another commit) each case also runs on that
code, in alternation with this one (``--rounds`` times each), so that both see the same
load on this shared machine; the medians are reported.

Run ``STREAMLEARN_DATA=../shared/data python bench/fit_times.py`` (``--quick``: letter
and usps only, one round; ``--datasets a,b``: only those datasets' cases; ``--models a,b``:
only those cases); results go to ``bench/results/fit_times.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine_info import library_versions, machine_info

RESULTS_DIR = Path(__file__).resolve().parent / "results"
SEED = 0
#: (case, dataset): the model and the datasets it runs on.
CASES = {
    "ShareBoost stumps, 100 rounds": ("letter", "shuttle"),
    "MixtureSVC()": ("usps", "letter"),
    "ShareBoostClassifier()": ("a9a", "adult", "mnist", "pendigits", "satimage"),
    "AdditiveSVC()": ("usps", "ijcnn1", "adult", "satimage"),
    "SparseJSBoostClassifier()": ("adult",),
}
PEERS = {
    "ShareBoost stumps, 100 rounds": ("LightGBM, 100 trees", "HistGradientBoosting"),
    "MixtureSVC()": ("LinearSVC",),
    "ShareBoostClassifier()": ("LinearSVC",),
    "AdditiveSVC()": ("LinearSVC",),
    "SparseJSBoostClassifier()": ("LightGBM, 100 trees", "LinearSVC"),
}
#: Peers of one (case, dataset) instead of the case's.
DATASET_PEERS = {("ShareBoostClassifier()", "mnist"): ("SGDClassifier",),
                 ("ShareBoostClassifier()", "pendigits"): ("LightGBM, 100 trees", "LinearSVC"),
                 ("ShareBoostClassifier()", "satimage"): ("LightGBM, 100 trees", "LinearSVC")}
QUICK = {"ShareBoost stumps, 100 rounds": ("letter",), "MixtureSVC()": ("usps",)}


def make(name: str) -> Any:
    """A fresh estimator for a case or peer name."""
    from streamlearn.models import (
        AdditiveSVC,
        MixtureSVC,
        ShareBoostClassifier,
        SparseJSBoostClassifier,
    )

    if name == "ShareBoost stumps, 100 rounds":
        return ShareBoostClassifier(features="stumps", n_rounds=100, random_state=SEED)
    if name == "MixtureSVC()":
        return MixtureSVC(random_state=SEED)
    if name == "ShareBoostClassifier()":
        return ShareBoostClassifier(random_state=SEED)
    if name == "AdditiveSVC()":
        return AdditiveSVC(random_state=SEED)
    if name == "SparseJSBoostClassifier()":
        return SparseJSBoostClassifier()  # deterministic: no random_state
    if name == "LightGBM, 100 trees":
        from lightgbm import LGBMClassifier

        return LGBMClassifier(n_estimators=100, verbose=-1, random_state=SEED)
    if name == "HistGradientBoosting":
        from sklearn.ensemble import HistGradientBoostingClassifier

        return HistGradientBoostingClassifier(random_state=SEED)
    if name == "SGDClassifier":
        from sklearn.linear_model import SGDClassifier

        return SGDClassifier(random_state=SEED)
    if name == "LinearSVC":
        from sklearn.svm import LinearSVC

        return LinearSVC(random_state=SEED)  # its defaults, as a user would fit it
    raise ValueError(f"unknown model {name!r}")


def run_one(name: str, dataset: str) -> dict[str, Any]:
    """Warm-up fit, timed fit and test error of one model on one dataset (this process)."""
    from out_of_the_box import load
    from units import counted_fit

    X, y, Xt, yt = load(dataset)[:4]
    make(name).fit(X, y)  # compiles, or loads the cached kernels this fit calls
    model, seconds, warned = counted_fit(make(name), X, y)
    error = 100.0 * float(np.mean(model.predict(Xt) != yt))
    return {"fit_s": seconds, "test_error_pct": error, "convergence_warnings": warned,
            "n_train": len(y)}


def source_hash(source: Path) -> str:
    """A hash of the package's sources under ``source``: numba checks a cached kernel
    against its own file only, not against the helpers it inlines from other files."""
    digest = hashlib.sha1()
    for path in sorted((source / "streamlearn").rglob("*.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def in_subprocess(name: str, dataset: str, source: Path) -> dict[str, Any]:
    """:func:`run_one` in a fresh process on the streamlearn found under ``source``."""
    env = dict(os.environ, PYTHONPATH=str(source))
    # each version of each checkout keeps its own kernel cache, so that neither compiles
    # in the timed fit nor runs a kernel compiled against older helpers
    env["NUMBA_CACHE_DIR"] = str(source / ".numba-cache" / f"bench-{source_hash(source)}")
    out = subprocess.run([sys.executable, __file__, "--one", name, dataset], env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


#: Targets of the fit times (seconds), where one is set.
TARGETS = {("ShareBoost stumps, 100 rounds", "letter"): 10.0, ("MixtureSVC()", "usps"): 2.0,
           ("ShareBoostClassifier()", "mnist"): 30.0}


def report_tables(report: dict[str, Any]) -> dict[str, Any]:
    """Title, summary and table for ``bench/REPORT.md``."""
    baseline = report.get("baseline_commit")
    columns = ["model", "dataset", "rows", "fit s", "test error %", "warnings"]
    if baseline:
        columns += [f"fit s at {baseline}", f"test error % at {baseline}"]
    columns += ["peer", "peer fit s", "peer test error %", "target s"]
    rows = []
    for r in report["results"]:
        for n, (peer, p) in enumerate(r["peers"].items()):
            cur = r["current"]
            row = ([r["model"], r["dataset"], cur["n_train"], round(cur["fit_s_median"], 2),
                    round(cur["test_error_pct"], 2), cur["convergence_warnings"]] if n == 0
                   else ["", "", "", "", "", ""])
            if baseline:
                base = r["baseline"]
                row += ([round(base["fit_s_median"], 2), round(base["test_error_pct"], 2)]
                        if n == 0 else ["", ""])
            row += [peer, round(p["fit_s"], 2), round(p["test_error_pct"], 2),
                    TARGETS.get((r["model"], r["dataset"])) if n == 0 else None]
            rows.append(row)
    met = [f"{m} on {d}: {'met' if r['current']['fit_s_median'] <= t else 'missed'}"
           for (m, d), t in TARGETS.items()
           for r in report["results"] if (r["model"], r["dataset"]) == (m, d)]
    return {"title": "Fit times of the defaults",
            "summary": ("Fit seconds (median over the rounds, warm kernel cache) and test "
                        "error of ShareBoost with stumps, MixtureSVC, linear ShareBoost, "
                        "AdditiveSVC and SparseJSBoost, "
                        "beside the peers users pick"
                        + (f" and the same code at {baseline}" if baseline else "")
                        + ". Targets: " + ("; ".join(met) if met else "none in this run")
                        + "."),
            "tables": [{"title": "fit times", "columns": columns, "rows": rows}]}


def commit_of(checkout: Path) -> str:
    """The commit a checkout is at (with ``+`` when its files differ from it)."""
    head = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True, check=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(checkout), "status", "--porcelain",
                            "--untracked-files=no"], capture_output=True, text=True,
                           check=True).stdout.strip()
    return head + ("+" if dirty else "")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--baseline", type=Path, default=None,
                        help="a checkout of another commit, run in alternation")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--datasets", default=None,
                        help="comma-separated datasets: only their cases")
    parser.add_argument("--models", default=None,
                        help="comma-separated case names (as in CASES): only those")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR)
    parser.add_argument("--one", nargs=2, metavar=("MODEL", "DATASET"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(run_one(*args.one)))
        return
    here = Path(__file__).resolve().parent.parent
    cases = QUICK if args.quick else CASES
    if args.datasets:
        keep = set(args.datasets.split(","))
        cases = {name: tuple(d for d in sets if d in keep) for name, sets in cases.items()}
    if args.models:
        chosen = set(args.models.split(","))
        unknown = chosen - set(CASES)
        if unknown:
            raise SystemExit(f"unknown case(s) {sorted(unknown)}; choose among {list(CASES)}")
        cases = {name: sets for name, sets in cases.items() if name in chosen}
    rounds = 1 if args.quick else args.rounds
    results: list[dict[str, Any]] = []
    for name, datasets in cases.items():
        for dataset in datasets:
            runs: dict[str, list[dict[str, Any]]] = {"current": []}
            if args.baseline is not None:
                runs["baseline"] = []
            for _ in range(rounds):
                for label in runs:
                    source = here if label == "current" else args.baseline.resolve()
                    runs[label].append(in_subprocess(name, dataset, source))
            row: dict[str, Any] = {"model": name, "dataset": dataset}
            for label, done in runs.items():
                row[label] = {"fit_s_median": float(np.median([r["fit_s"] for r in done])),
                              "fit_s": [r["fit_s"] for r in done],
                              "test_error_pct": done[-1]["test_error_pct"],
                              "convergence_warnings": done[-1]["convergence_warnings"],
                              "n_train": done[-1]["n_train"]}
            peers = DATASET_PEERS.get((name, dataset), PEERS[name])
            row["peers"] = {peer: in_subprocess(peer, dataset, here) for peer in peers}
            results.append(row)
            line = (f"{name:30s} {dataset:9s} {row['current']['fit_s_median']:7.2f} s "
                    f"{row['current']['test_error_pct']:6.2f} %")
            if "baseline" in row:
                line += (f" | baseline {row['baseline']['fit_s_median']:7.2f} s "
                         f"{row['baseline']['test_error_pct']:6.2f} %")
            for peer, r in row["peers"].items():
                line += f" | {peer} {r['fit_s']:.2f} s {r['test_error_pct']:.2f} %"
            print(line, flush=True)
    report = {"benchmark": "fit_times", "machine": machine_info(),
              "versions": library_versions(("numpy", "numba", "scikit-learn", "lightgbm",
                                            "streamlearn")),
              "baseline_commit": None if args.baseline is None else commit_of(args.baseline),
              "current_commit": commit_of(here),
              "rounds": rounds, "created": time.strftime("%Y-%m-%d %H:%M:%S"),
              "results": results}
    report.update(report_tables(report))
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "fit_times.json"
    path.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
