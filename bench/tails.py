"""Crowded features: ``AdditiveSVC()`` with and without ``spread_tails`` against its peers.

A generated problem whose features crowd into a small part of their range: ten lognormal(0,
2) features (a constant and a copy of the first among them), the label the sign of
``log x0 + sin(log x1) - (log x2)^2 / 2 + 1 + N(0, 0.5)``, 20,000 rows, 30 % of them held
out for testing (stratified). Side by side, in one run: ``AdditiveSVC()`` (which maps the
crowded features by ``asinh`` first), ``AdditiveSVC(spread_tails=False)`` (uniform knots
over the raw range), the same with ``knots="quantile"``, ``AdditiveSVC(spread_tails=False)``
given the logarithms of the features (what a user who knew the problem would do),
scikit-learn's ``HistGradientBoostingClassifier``, LightGBM and a standardised
``LinearSVC``. Test error %, fit seconds, the features the rule mapped.

Run ``python bench/tails.py`` (about a minute; ``--quick``: 5,000 rows); results go to
``bench/results/tails.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine_info import library_versions, machine_info

RESULTS_DIR = Path(__file__).resolve().parent / "results"
ROWS = 20_000
QUICK_ROWS = 5_000
SEED = 2


def problem(n: int, seed: int = SEED) -> tuple[np.ndarray, np.ndarray]:
    """The generated rows (float64) and 0/1 labels."""
    rng = np.random.default_rng(seed)
    X = rng.lognormal(0.0, 2.0, size=(n, 10))
    X[:, 3] = 5.0
    X[:, 4] = X[:, 0]
    f = np.log(X[:, 0]) + np.sin(np.log(X[:, 1])) - 0.5 * np.log(X[:, 2]) ** 2
    return X, (f + rng.normal(0.0, 0.5, n) > -1.0).astype(int)


def methods() -> dict[str, tuple[Any, bool]]:
    """Label -> (unfitted estimator, whether it gets the logarithms of the features)."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import LinearSVC

    from streamlearn.models import AdditiveSVC

    out: dict[str, tuple[Any, bool]] = {
        "AdditiveSVC()": (AdditiveSVC(progress=False), False),
        "AdditiveSVC(spread_tails=False)": (AdditiveSVC(spread_tails=False, progress=False),
                                            False),
        "AdditiveSVC(spread_tails=False, knots='quantile')": (
            AdditiveSVC(spread_tails=False, knots="quantile", progress=False), False),
        "AdditiveSVC(spread_tails=False) on log x": (
            AdditiveSVC(spread_tails=False, progress=False), True),
        "HistGradientBoostingClassifier()": (HistGradientBoostingClassifier(), False),
        "LinearSVC, standardised": (make_pipeline(StandardScaler(), LinearSVC()), False),
    }
    try:
        from lightgbm import LGBMClassifier

        out["LightGBM"] = (LGBMClassifier(verbose=-1), False)
    except ImportError:
        pass
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_ROWS:,d} rows")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="results directory")
    args = parser.parse_args(argv)
    from sklearn.model_selection import train_test_split

    started = time.perf_counter()
    n = QUICK_ROWS if args.quick else ROWS
    X, y = problem(n)
    X = X.astype(np.float32)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=0,
                                                        stratify=y)
    rows = []
    for label, (model, logs) in methods().items():
        A, At = (np.log(X_train), np.log(X_test)) if logs else (X_train, X_test)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.perf_counter()
            model.fit(A, y_train)
            fit_s = time.perf_counter() - t0
        error = 100.0 * float(np.mean(model.predict(At) != y_test))
        mapped = getattr(model, "feature_transform_", None)
        row = {"method": label, "test_error_pct": error, "fit_s": fit_s,
               "mapped_features": [] if mapped is None else mapped.features.tolist()}
        rows.append(row)
        print(f"{label:52s} {error:6.2f} %  {fit_s:6.2f} s  mapped {row['mapped_features']}",
              flush=True)
    report = {
        "benchmark": "tails", "machine": machine_info(),
        "versions": library_versions(("numpy", "numba", "scikit-learn", "lightgbm",
                                      "streamlearn")),
        "settings": {"rows": n, "test_share": 0.3, "seed": SEED, "quick": bool(args.quick)},
        "results": rows, "total_runtime_s": time.perf_counter() - started,
        "title": "Crowded features (spread_tails)",
        "summary": ("Test error on a generated problem of lognormal(0, 2) features whose "
                    "logarithms make the label; AdditiveSVC() maps them by asinh first."),
        "tables": [{"title": "test error and fit time",
                    "columns": ["method", "test error %", "fit s", "features mapped"],
                    "rows": [[r["method"], round(r["test_error_pct"], 2), round(r["fit_s"], 2),
                              str(r["mapped_features"])] for r in rows]}],
    }
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "tails.json"
    path.write_text(json.dumps(report, indent=2) + "\n")
    print(f"results in {path}")


if __name__ == "__main__":
    main()
