"""Rows stored grouped by class: each model's defaults on the same rows in two orders.

A file sorted by its label, or per-class files joined, streams chunks of one class each.
This fits every classifier's defaults on the provided training rows (at most 20,000, the
seeded subset of ``bench/out_of_the_box.py``) given as a dataset of ``--chunk-rows`` rows a
chunk (default 1,024), once with the rows stored sorted by class and once shuffled, and
scores both on the test split. The peer a user streaming chunks would pick,
scikit-learn's ``SGDClassifier`` (hinge loss, standardised by a ``StandardScaler`` fitted
with ``partial_fit`` on the chunks first), takes the same chunks in the stored order with
``partial_fit``, five epochs. Test error %, fit seconds.

Run ``STREAMLEARN_DATA=../shared/data python bench/rows_by_class.py`` (about 5 minutes;
``--datasets``, ``--models``); results go to ``bench/results/rows_by_class.json``. Point
``PYTHONPATH`` at another checkout to measure its library the same way.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine_info import library_versions, machine_info

RESULTS_DIR = Path(__file__).resolve().parent / "results"
DATASETS = ("ijcnn1", "letter", "pendigits", "satimage")
MODELS = ("AdditiveSVC", "MixtureSVC", "ShareBoostClassifier", "SuperSparseClassifier",
          "SGDClassifier")
MAX_TRAIN_ROWS = 20_000
SGD_EPOCHS = 5


def sgd_fit(X: np.ndarray, y: np.ndarray, chunk_rows: int, classes: np.ndarray) -> Any:
    """``SGDClassifier`` over the chunks in their stored order, standardised by a scaler
    fitted on the same chunks first."""
    from sklearn.linear_model import SGDClassifier
    from sklearn.preprocessing import StandardScaler

    scaler = StandardScaler()
    for a in range(0, len(y), chunk_rows):
        scaler.partial_fit(X[a:a + chunk_rows])
    model = SGDClassifier(random_state=0)
    for _ in range(SGD_EPOCHS):
        for a in range(0, len(y), chunk_rows):
            model.partial_fit(scaler.transform(X[a:a + chunk_rows]), y[a:a + chunk_rows],
                              classes=classes)
    return lambda Z: model.predict(scaler.transform(Z))


def run(datasets: list[str], models: list[str], chunk_rows: int) -> list[dict[str, Any]]:
    import out_of_the_box as oob

    import streamlearn

    rows = []
    for name in datasets:
        X, y, Xt, yt = oob.load(name)
        X, y = oob.subsample(X, y, MAX_TRAIN_ROWS, oob.SEED, shuffle=True)
        orders = {"by class": np.argsort(y, kind="stable"), "shuffled": np.arange(len(y))}
        for model in models:
            for order, idx in orders.items():
                Xo, yo = np.ascontiguousarray(X[idx]), y[idx]
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    start = time.perf_counter()
                    if model == "SGDClassifier":
                        predict = sgd_fit(Xo, yo, chunk_rows, np.unique(y))
                    else:
                        data = streamlearn.open_dataset(Xo, target=yo, task="classification",
                                                        chunk_rows=chunk_rows)
                        predict = getattr(streamlearn, model)(progress=False).fit(data).predict
                    fit_s = time.perf_counter() - start
                error = 100.0 * float(np.mean(predict(Xt) != yt))
                row = {"dataset": name, "model": model, "order": order, "n_train": len(y),
                       "chunk_rows": chunk_rows, "test_error_pct": error, "fit_s": fit_s,
                       "warnings": sorted({w.category.__name__ for w in caught})}
                rows.append(row)
                print(f"{name:10s} {model:22s} {order:9s} error {error:6.2f} %  "
                      f"fit {fit_s:6.2f} s", flush=True)
    return rows


def table(rows: list[dict[str, Any]], datasets: list[str], models: list[str]) -> str:
    cell = {(r["dataset"], r["model"], r["order"]): r["test_error_pct"] for r in rows}
    lines = ["| model | " + " | ".join(f"{d} by class | {d} shuffled" for d in datasets) + " |",
             "|---|" + "---|" * (2 * len(datasets))]
    for m in models:
        lines.append(f"| {m} | " + " | ".join(
            f"{cell[(d, m, 'by class')]:.2f} | {cell[(d, m, 'shuffled')]:.2f}"
            for d in datasets) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--chunk-rows", type=int, default=1024)
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "rows_by_class.json")
    args = parser.parse_args()
    datasets = args.datasets.split(",")
    models = args.models.split(",")
    unknown = [m for m in models if m not in MODELS] + [d for d in datasets if d not in DATASETS]
    if unknown:
        sys.exit(f"unknown: {', '.join(unknown)}; datasets {DATASETS}, models {MODELS}")
    import streamlearn

    start = time.perf_counter()
    rows = run(datasets, models, args.chunk_rows)
    commit = subprocess.run(["git", "-C", str(Path(streamlearn.__file__).parent), "rev-parse",
                             "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    report = {"benchmark": "rows_by_class", "machine": machine_info(),
              "versions": library_versions(), "library_path": streamlearn.__file__,
              "library_commit": commit, "settings": vars(args) | {"out": str(args.out)},
              "results": rows, "total_runtime_s": time.perf_counter() - start,
              "table": table(rows, datasets, models)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, default=str) + "\n")
    print("\n" + report["table"])
    print(f"\nresults in {args.out}")


if __name__ == "__main__":
    main()
