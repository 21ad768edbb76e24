"""How good are the probabilities: every classifier's ``predict_proba`` with its defaults.

A user who ranks, thresholds or averages models reads ``predict_proba``, not ``predict``.
Each classifier is fitted with its defaults (``progress=False`` only) and scored on test
rows by:

- log-loss (the mean negative log-probability of the true class; lower is better),
- the Brier score (the mean squared distance of the probability vector from the one-hot
  label),
- the expected calibration error (ECE): the rows binned by their top probability into 15
  equal-width bins, the mean over rows of ``|accuracy - confidence|`` of their bin,
- and the test error %, so that a sharp and a well-calibrated model can be told apart.

Data: the provided splits of satimage, pendigits, letter, usps, adult and ijcnn1 (at most
20,000 training rows, a seeded subset, as ``bench/out_of_the_box.py`` takes them), and one
stratified 70/30 split of breast cancer and digits (bundled with scikit-learn).

Peers in the same run: ``LogisticRegression`` on standardised features (its defaults),
``HistGradientBoostingClassifier`` and LightGBM with their defaults, and
``CalibratedClassifierCV(SuperSparseClassifier())`` (3-fold sigmoid calibration, the
scikit-learn way to put probabilities on a classifier's scores: three more fits).

Run ``STREAMLEARN_DATA=../shared/data python bench/probabilities.py`` (about 11 minutes on 2
cores, 5 of them ``SparseJSBoostClassifier`` on adult; ``--datasets a,b`` for some,
``--methods`` for some methods, ``--quick`` for the two bundled sets, no data files
needed); results go to ``bench/results/probabilities.json``. The fit seconds include
numba's compilation in each model's first fit.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine_info import library_versions, machine_info
from out_of_the_box import load, subsample

RESULTS_DIR = Path(__file__).resolve().parent / "results"
MAX_TRAIN_ROWS = 20_000
SEED = 0
ECE_BINS = 15
PROVIDED = ("satimage", "pendigits", "letter", "usps", "adult", "ijcnn1")
BUNDLED = ("breast cancer", "digits")
DATASETS = BUNDLED + PROVIDED


def dataset(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Train and test rows, labels coded 0..K-1 by the training labels."""
    if name in BUNDLED:
        from sklearn import datasets as D
        from sklearn.model_selection import train_test_split

        X, y = (D.load_breast_cancer if name == "breast cancer" else D.load_digits)(
            return_X_y=True)
        X, Xt, y, yt = train_test_split(X.astype(np.float32), y, test_size=0.3,
                                        random_state=SEED, stratify=y)
    else:
        X, y, Xt, yt = load(name)
        X, y = subsample(X, y, MAX_TRAIN_ROWS, SEED)
    classes = np.unique(y)
    keep = np.isin(yt, classes)  # test labels unseen in training cannot be scored
    return X, np.searchsorted(classes, y), Xt[keep], np.searchsorted(classes, yt[keep])


def methods() -> dict[str, Callable[[], Any]]:
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    import streamlearn as sl

    out: dict[str, Callable[[], Any]] = {
        "AdditiveSVC()": lambda: sl.AdditiveSVC(progress=False),
        "MixtureSVC()": lambda: sl.MixtureSVC(progress=False),
        "ShareBoostClassifier()": lambda: sl.ShareBoostClassifier(progress=False),
        "SparseJSBoostClassifier()": lambda: sl.SparseJSBoostClassifier(progress=False),
        "SuperSparseClassifier()": lambda: sl.SuperSparseClassifier(progress=False),
        "CalibratedClassifierCV(SuperSparseClassifier())": lambda: CalibratedClassifierCV(
            sl.SuperSparseClassifier(progress=False), cv=3),
        "LogisticRegression (standardised)": lambda: make_pipeline(
            StandardScaler(), LogisticRegression(max_iter=1000)),
        "HistGradientBoosting": lambda: HistGradientBoostingClassifier(),
    }
    try:
        import lightgbm

        out["LightGBM"] = lambda: lightgbm.LGBMClassifier(verbose=-1)
    except ImportError:
        pass
    return out


def scores(proba: np.ndarray, yt: np.ndarray) -> dict[str, float]:
    """Log-loss, Brier score, ECE and test error % of class probabilities."""
    n, k = proba.shape
    p = np.clip(proba, 1e-15, 1.0)
    onehot = np.eye(k)[yt]
    top = proba.max(axis=1)
    right = proba.argmax(axis=1) == yt
    bins = np.minimum((top * ECE_BINS).astype(int), ECE_BINS - 1)
    ece = sum(abs(right[bins == b].mean() - top[bins == b].mean()) * np.count_nonzero(bins == b)
              for b in range(ECE_BINS) if np.any(bins == b)) / n
    return {"log_loss": float(-np.mean(np.log(p[np.arange(n), yt]))),
            "brier": float(np.mean(((proba - onehot) ** 2).sum(axis=1))),
            "ece": float(ece),
            "error_pct": float(100.0 * (1.0 - right.mean()))}


def fitted_losses(model: Any) -> list[str]:
    """The ``loss_`` of a fitted model, or of each of a calibrated model's fitted copies
    (empty where none has one): which loss its coefficients have."""
    inner = [c.estimator for c in getattr(model, "calibrated_classifiers_", [])] or [model]
    return [m.loss_ for m in inner if hasattr(m, "loss_")]


def run(names: list[str], chosen: list[str] | None) -> list[dict[str, Any]]:
    table = methods()
    rows = []
    for name in names:
        X, y, Xt, yt = dataset(name)
        n_classes = int(y.max()) + 1
        for method, make in table.items():
            if chosen and method not in chosen:
                continue
            if method.startswith("SparseJSBoost") and n_classes > 2:
                continue  # two classes only
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")  # counted and recorded, not hidden
                t0 = time.perf_counter()
                model = make().fit(X, y)
                fit_s = time.perf_counter() - t0
                proba = np.asarray(model.predict_proba(Xt), dtype=np.float64)
            warned: dict[str, int] = {}
            for w in caught:
                warned[w.category.__name__] = warned.get(w.category.__name__, 0) + 1
            losses = fitted_losses(model)
            row = {"dataset": name, "method": method, "train_rows": len(y),
                   "test_rows": len(yt), "classes": n_classes, "fit_s": fit_s,
                   **scores(proba, yt), "warnings": warned,
                   **({"fitted_loss": losses} if losses else {})}
            rows.append(row)
            print(f"{name:14s} {method:48s} log-loss {row['log_loss']:.4f}  "
                  f"Brier {row['brier']:.4f}  ECE {row['ece']:.4f}  "
                  f"error {row['error_pct']:.2f} %  fit {fit_s:.1f} s  warnings {warned}",
                  flush=True)
    return rows


def report_tables(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Log-loss and calibration error, a row per method, a column per dataset."""
    methods_ = list(dict.fromkeys(r["method"] for r in rows))
    sets = list(dict.fromkeys(r["dataset"] for r in rows))
    cells = {(r["dataset"], r["method"]): r for r in rows}
    tables = [{"title": f"Test {label}",
               "columns": ["method", *sets],
               "rows": [[m, *(round(cells[(d, m)][key], 4) if (d, m) in cells else None
                              for d in sets)] for m in methods_]}
              for key, label in (("log_loss", "log-loss"), ("ece", "expected calibration error"),
                                 ("error_pct", "error %"))]
    return {"title": "Probabilities: every classifier's predict_proba with its defaults",
            "summary": ("Test log-loss, expected calibration error (15 bins) and error of "
                        "each classifier's defaults beside logistic regression, "
                        "HistGradientBoosting, LightGBM and 3-fold sigmoid calibration."),
            "tables": tables}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", default=",".join(DATASETS),
                        help="comma-separated, from: " + ", ".join(DATASETS))
    parser.add_argument("--methods", default="", help="comma-separated method names")
    parser.add_argument("--quick", action="store_true",
                        help="the two bundled sets only (no data files needed)")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="results directory")
    args = parser.parse_args()
    names = [n.strip() for n in args.datasets.split(",") if n.strip()]
    if args.quick:
        names = [n for n in names if n in BUNDLED]
    unknown = sorted(set(names) - set(DATASETS))
    if unknown:
        parser.error(f"unknown datasets {unknown}; choose from {list(DATASETS)}")
    chosen = [m.strip() for m in args.methods.split(",") if m.strip()] or None
    started = time.perf_counter()
    rows = run(names, chosen)
    result = {"benchmark": "probabilities", "machine": machine_info(),
              "versions": library_versions(("streamlearn", "numpy", "numba", "scikit-learn",
                                            "lightgbm")),
              "max_train_rows": MAX_TRAIN_ROWS, "ece_bins": ECE_BINS, "quick": args.quick,
              "results": rows, "total_runtime_s": time.perf_counter() - started,
              **report_tables(rows)}
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "probabilities.json"
    path.write_text(json.dumps(result, indent=1))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
