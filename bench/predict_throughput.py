"""Prediction throughput of every model against the peers users would deploy instead.

Each model is fitted with its library's defaults on a generated problem (32 float32
features, a nonlinear two-class label, 20,000 training rows; the regressors on a nonlinear
target), then predicts 1,000,000 rows on one core:

- **in memory**: ``predict`` on a float32 array, best of 3 after a warm-up call, with every
  thread pool (BLAS, OpenMP, LightGBM's, numba's) held to one thread;
- **over a store**: the same rows in a zarr store, streamed chunk by chunk through
  ``predict`` into a parquet file (what ``streamlearn predict MODEL DATA --out FILE`` does),
  for the streamlearn models, best of 3 (the store is in the page cache).

The peers: LightGBM (``LGBMClassifier``, ``num_threads=1``), scikit-learn's
``HistGradientBoostingClassifier`` and an RBF ``SVC`` (at most 10,000 training rows, as a
kernel SVM is trained in practice), each predicting the same array. Test accuracy (R2 for
the regressors) on held-out rows is reported beside the rates so that a fast but useless
model does not pass unnoticed.

Run ``python bench/predict_throughput.py`` (``--quick``: 200,000 rows to predict);
results go to ``bench/results/predict_throughput.json``.
"""

from __future__ import annotations

import os

# one core: set before numpy, numba and the peers load their thread pools
for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
              "NUMBA_NUM_THREADS"):
    os.environ[_name] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
from gaussian_rows import N_FEATURES, gaussian_rows  # noqa: E402
from machine_info import library_versions, machine_info  # noqa: E402

RESULTS_DIR = Path(__file__).resolve().parent / "results"
SEED = 0
TRAIN_ROWS = 20_000
TEST_ROWS = 20_000
SVM_TRAIN_ROWS = 10_000
STORE_CHUNK_ROWS = 65_536
SETTINGS = {"quick": {"predict_rows": 200_000, "repeats": 2},
            "full": {"predict_rows": 1_000_000, "repeats": 3}}

CLASSIFIERS = ("AdditiveSVC", "MixtureSVC", "ShareBoostClassifier", "SparseJSBoostClassifier",
               "SuperSparseClassifier")
REGRESSORS = ("SparsePPRRegressor", "SuperSparseRegressor")
PEERS = ("LightGBM", "HistGradientBoosting", "SVC (RBF)")


def log(message: str) -> None:
    """Progress on stderr."""
    print(message, file=sys.stderr, flush=True)


def one_thread() -> Any:
    """A context holding every native thread pool to one thread (threadpoolctl)."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(1)


#: A predictor slower than this many seconds over all the rows is timed on fewer rows.
MAX_CALL_S = 5.0


def best_rate(function: Any, X: np.ndarray, repeats: int) -> float:
    """Best-of-``repeats`` rows per second of ``function(X)``, after a warm-up call.

    A predictor that would take more than :data:`MAX_CALL_S` over all rows (a kernel SVM)
    is timed on the first rows that it predicts in about that time (rows/s is linear in
    the rows there).
    """
    function(X[:1000])  # warm-up (compiles a kernel not yet cached)
    t0 = time.perf_counter()
    function(X[:10_000])  # an estimate of the rate
    estimate = 10_000 / max(time.perf_counter() - t0, 1e-9)
    n = min(X.shape[0], max(10_000, int(estimate * MAX_CALL_S)))
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        function(X[:n])
        best = min(best, time.perf_counter() - t0)
    return n / best


def fit_ours(name: str, X: np.ndarray, y: np.ndarray) -> tuple[Any, int]:
    """The model's defaults (``progress`` off), fitted on ``X, y``, and the
    ``ConvergenceWarning``s the fit raised (counted and recorded, not hidden)."""
    from units import counted_fit

    import streamlearn.models as models

    model = getattr(models, name)()
    if "progress" in model.get_params():
        model.set_params(progress=False)
    model, _, warned = counted_fit(model, X, y)
    return model, warned


def fit_peer(name: str, X: np.ndarray, y: np.ndarray) -> Any:
    """A peer with its library's defaults (one thread)."""
    if name == "LightGBM":
        from lightgbm import LGBMClassifier

        return LGBMClassifier(num_threads=1, verbose=-1, random_state=SEED).fit(X, y)
    if name == "HistGradientBoosting":
        from sklearn.ensemble import HistGradientBoostingClassifier

        return HistGradientBoostingClassifier(random_state=SEED).fit(X, y)
    from sklearn.svm import SVC

    return SVC().fit(X[:SVM_TRAIN_ROWS], y[:SVM_TRAIN_ROWS])


def store_rate(model: Any, path: str, out_dir: Path, repeats: int) -> float:
    """Best-of-``repeats`` rows per second of streaming the store through ``model`` into a
    parquet file."""
    from streamlearn.cli import write_predictions
    from streamlearn.data import open_dataset

    dataset = open_dataset(path, chunk_rows=STORE_CHUNK_ROWS)
    out = out_dir / "predictions.parquet"
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        n, _ = write_predictions(model, dataset, out)
        best = min(best, time.perf_counter() - t0)
        out.unlink()
    return n / best


def write_store(X: np.ndarray, path: Path) -> str:
    """The rows as a zarr store of features (no target), chunked by rows."""
    from streamlearn.data import open_dataset
    from streamlearn.data.convert import convert

    convert(open_dataset(X, chunk_rows=STORE_CHUNK_ROWS), str(path))
    return str(path)


def run(mode: str, out_dir: Path) -> dict[str, Any]:
    """Fit, measure, and write the JSON results."""
    cfg = SETTINGS[mode]
    X, y, target = gaussian_rows(TRAIN_ROWS, SEED)
    Xt, yt, tt = gaussian_rows(TEST_ROWS, SEED + 1)
    P, _, _ = gaussian_rows(cfg["predict_rows"], SEED + 2)
    scratch = Path(tempfile.mkdtemp(prefix="predict-throughput-"))
    rows: list[dict[str, Any]] = []
    try:
        store = write_store(P, scratch / "rows.zarr")
        with one_thread():
            for name in (*CLASSIFIERS, *REGRESSORS, *PEERS):
                ours = name not in PEERS
                regression = name in REGRESSORS
                log(f"{name}: fitting")
                t0 = time.perf_counter()
                model, warned = (fit_ours(name, X, target if regression else y) if ours
                                 else (fit_peer(name, X, y), None))
                fit_s = time.perf_counter() - t0
                quality = model.score(Xt, tt if regression else yt)
                rate = best_rate(model.predict, P, cfg["repeats"])
                row = {"model": name, "ours": ours, "task": "regression" if regression
                       else "classification", "fit_s": fit_s,
                       "test_score": float(quality), "predict_rows_per_s": rate,
                       "meets_1M": bool(rate >= 1e6) if ours else None,
                       "convergence_warnings": warned}
                if hasattr(model, "decision_function") and ours:
                    row["decision_rows_per_s"] = best_rate(model.decision_function, P,
                                                           cfg["repeats"])
                if hasattr(model, "predict_proba"):
                    row["proba_rows_per_s"] = best_rate(model.predict_proba, P,
                                                        cfg["repeats"])
                if ours:
                    row["store_rows_per_s"] = store_rate(model, store, scratch, cfg["repeats"])
                log(f"  {'R2' if regression else 'accuracy'} {quality:.4f}, predict "
                    f"{rate / 1e6:.3g} M rows/s"
                    + (f", over the store {row['store_rows_per_s'] / 1e6:.3g} M rows/s"
                       if ours else ""))
                rows.append(row)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    report: dict[str, Any] = {
        "benchmark": "predict_throughput",
        "machine": machine_info(),
        "versions": library_versions(("numpy", "numba", "zarr", "pyarrow", "scikit-learn",
                                      "lightgbm", "streamlearn")),
        "settings": {"mode": mode, **cfg, "n_features": N_FEATURES, "train_rows": TRAIN_ROWS,
                     "test_rows": TEST_ROWS, "svm_train_rows": SVM_TRAIN_ROWS,
                     "store_chunk_rows": STORE_CHUNK_ROWS, "threads": 1, "seed": SEED},
        "rows": rows,
    }
    report.update(report_tables(report))
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "predict_throughput.json"
    path.write_text(json.dumps(report, indent=2) + "\n")
    print(report["summary"])
    print(f"results in {path}")
    return report


def report_tables(report: dict[str, Any]) -> dict[str, Any]:
    """Title, summary and table for ``bench/REPORT.md``."""
    rows = report["rows"]
    ours = [r for r in rows if r["ours"]]
    slow = [r["model"] for r in ours if not r["meets_1M"]]

    def rate(value: float | None) -> str:
        return "-" if value is None else f"{value / 1e6:.3g}"

    return {
        "title": "Prediction throughput, one core",
        "summary": (f"{report['settings']['predict_rows']:,} rows x {N_FEATURES} features "
                    f"predicted on one core: "
                    + ", ".join(f"{r['model']} {r['predict_rows_per_s'] / 1e6:.3g}M rows/s"
                                for r in rows)
                    + (f". Below 1M rows/s: {', '.join(slow)}." if slow
                       else ". Every streamlearn model predicts >= 1M rows/s.")
                    + " ConvergenceWarnings of the fits: "
                    + (", ".join(f"{r['model']} {r['convergence_warnings']}" for r in ours
                                 if r["convergence_warnings"]) or "none") + "."),
        "tables": [{
            "title": "Rows per second (millions), one core",
            "columns": ["model", "test accuracy / R2", "fit s", "predict", "decision_function",
                        "predict_proba", "predict over a zarr store"],
            "rows": [[r["model"], r["test_score"], r["fit_s"], rate(r["predict_rows_per_s"]),
                      rate(r.get("decision_rows_per_s")), rate(r.get("proba_rows_per_s")),
                      rate(r.get("store_rows_per_s"))] for r in rows],
            "notes": (f"Defaults of each library, fitted on {TRAIN_ROWS:,} generated rows "
                      f"(SVC on {SVM_TRAIN_ROWS:,}); in memory: best of "
                      f"{report['settings']['repeats']} after a warm-up; over a store: best of "
                      f"{report['settings']['repeats']}, chunks of {STORE_CHUNK_ROWS:,} rows "
                      "read, predicted and written to parquet, as `streamlearn predict` does."),
        }],
        "plots": [],
    }


def main(argv: list[str] | None = None) -> None:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="200,000 rows to predict")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="results directory")
    args = parser.parse_args(argv)
    run("quick" if args.quick else "full", args.out)


if __name__ == "__main__":
    main()
