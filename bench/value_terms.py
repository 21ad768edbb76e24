"""Value terms: does a few-valued numeric feature fit better with one weight per value?

A B-spline term draws a curve that is smooth in the feature's value. Some numeric features
take few values whose effects are not smooth in them: a capital gain of exactly 7,688 or
15,024 says more about income than its neighbours do. A model with one weight per value
(the feature one-hot encoded by value, as a categorical column would be) can follow such a
feature; Explainable Boosting Machines come close to it with their fine bins.

``AdditiveSVC(value_terms="auto")``, the default, screens the per-feature model's
residuals for features that jump at single values and adds a value term (one weight per
frequent value, beside the curve) where the held-out rows say it pays. For each dataset
this script fits ``AdditiveSVC`` with its defaults, with ``value_terms=False``, and, as
references that need no screening, with ``value_terms=False`` on the features encoded by
hand; each also with ``interactions=0``. It finds the training rows' few-valued numeric
columns (3 to ``MAX_VALUES`` distinct values; two-valued ones are already one weight per
value), and the hand encodings are:

- every few-valued column replaced by its one-hot encoding by value (values held by fewer
  than ``MIN_ROWS`` training rows share one column; a test value never seen in training
  sets none);
- each few-valued column so encoded alone, where there are at most
  ``MAX_SINGLE_COLUMNS`` of them, to show which column carries the difference.

Run ``python bench/value_terms.py`` (``STREAMLEARN_DATA`` as for the other scripts; a few
minutes on 2 cores); ``--datasets adult`` for one set, ``--quick`` for adult at
``QUICK_TRAIN`` rows. Results go to
``bench/results/value_terms.json``. At most ``MAX_TRAIN`` training rows, a seeded subset,
as in ``bench/out_of_the_box.py``.
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
from out_of_the_box import load, subsample

RESULTS_DIR = Path(__file__).resolve().parent / "results"
DATASETS = ("adult", "satimage", "pendigits", "letter", "shuttle", "ijcnn1")
MAX_TRAIN = 20_000
QUICK_TRAIN = 5_000
MAX_VALUES = 256
MIN_ROWS = 5
MAX_SINGLE_COLUMNS = 8
SEED = 0


def few_valued(X: np.ndarray) -> list[int]:
    """Columns with 3 to ``MAX_VALUES`` distinct values."""
    return [j for j in range(X.shape[1]) if 3 <= len(np.unique(X[:, j])) <= MAX_VALUES]


def one_hot_by_value(X: np.ndarray, Xt: np.ndarray,
                     columns: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """``columns`` replaced by one column per value (rare values pooled), train and test."""
    from sklearn.preprocessing import OneHotEncoder

    encoder = OneHotEncoder(handle_unknown="ignore", min_frequency=MIN_ROWS,
                            sparse_output=False).fit(X[:, columns])

    def encode(A: np.ndarray) -> np.ndarray:
        return np.hstack([np.delete(A, columns, axis=1),
                          encoder.transform(A[:, columns])]).astype(np.float32)

    return encode(X), encode(Xt)


def fit_error(params: dict[str, Any], X: np.ndarray, y: np.ndarray, Xt: np.ndarray,
              yt: np.ndarray) -> dict[str, Any]:
    """Test error %, fit seconds and the ConvergenceWarnings of one fit (counted, not
    hidden)."""
    from sklearn.exceptions import ConvergenceWarning

    from streamlearn.models import AdditiveSVC

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        t0 = time.perf_counter()
        model = AdditiveSVC(progress=False, **params).fit(X, y)
        seconds = time.perf_counter() - t0
    check = getattr(model, "value_check_", None)
    return {"test_error_pct": 100.0 * (1.0 - float(model.score(Xt, yt))), "fit_s": seconds,
            "n_features": int(X.shape[1]),
            "value_terms": {name: len(values) for name, values in model.value_terms_},
            "value_check": None if check is None else {
                key: check[key] for key in ("kept", "screened", "scores",
                                            "held_out_log_loss_without",
                                            "held_out_log_loss_with") if key in check},
            "convergence_warnings": sum(issubclass(w.category, ConvergenceWarning)
                                        for w in caught)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", default=",".join(DATASETS),
                        help="comma-separated dataset names")
    parser.add_argument("--quick", action="store_true",
                        help=f"adult alone, at {QUICK_TRAIN} training rows")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="results directory")
    args = parser.parse_args(argv)
    names = ["adult"] if args.quick else args.datasets.split(",")
    max_train = QUICK_TRAIN if args.quick else MAX_TRAIN
    models = {"AdditiveSVC()": {},
              "AdditiveSVC(value_terms=False)": {"value_terms": False},
              "AdditiveSVC(interactions=0)": {"interactions": 0},
              "AdditiveSVC(interactions=0, value_terms=False)": {"interactions": 0,
                                                                 "value_terms": False}}
    rows = []
    for name in names:
        X, y, Xt, yt = load(name)
        X, y = subsample(X, y, max_train, SEED)  # the rows of the file's order, seeded
        columns = few_valued(X)
        variants: dict[str, list[int]] = {"as they are": []}
        if columns:
            variants["every few-valued column by value"] = columns
        if 1 < len(columns) <= MAX_SINGLE_COLUMNS:
            variants.update({f"column {j} by value": [j] for j in columns})
        for label, params in models.items():
            # the hand encodings are references for the model without value terms
            tried = variants if params.get("value_terms") is False else {"as they are": []}
            for variant, chosen in tried.items():
                A, At = one_hot_by_value(X, Xt, chosen) if chosen else (X, Xt)
                result = fit_error(params, A, y, At, yt)
                rows.append({"dataset": name, "model": label, "features": variant,
                             "columns": chosen, "n_values": [len(np.unique(X[:, j]))
                                                             for j in chosen],
                             "n_train": len(y), **result})
                print(f"{name:10s} {label:46s} {variant:34s} "
                      f"{result['test_error_pct']:6.2f} %  {result['fit_s']:5.1f} s  "
                      f"value terms {result['value_terms']}", flush=True)
    report = {"benchmark": "value_terms", "machine": machine_info(),
              "versions": library_versions(("numpy", "numba", "scikit-learn", "streamlearn")),
              "quick": bool(args.quick), "max_train": max_train, "max_values": MAX_VALUES,
              "min_rows": MIN_ROWS, "seed": SEED, "results": rows}
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "value_terms.json"
    path.write_text(json.dumps(report, indent=2) + "\n")
    print(f"results in {path}")


if __name__ == "__main__":
    main()
