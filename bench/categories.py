"""Categorical columns given as categories: ``AdditiveSVC()`` on UCI adult's raw table.

Adult's eight categorical columns (up to 42 categories, ``native_country``) as pandas
categories, the provided train and test files, all rows. Side by side, in one run:

- ``AdditiveSVC()`` on the table (categories coded by the model; its first count of bases
  is the longest category list plus the degree, a knot per category);
- the same with ``n_bases`` fixed at 16 and at 48;
- ``AdditiveSVC()`` on one-hot columns (how ``bench/out_of_the_box.py`` loads adult);
- LightGBM and scikit-learn's ``HistGradientBoostingClassifier`` with their own
  categorical support (``category`` dtype);
- a standardised ``LinearSVC`` on the one-hot columns.

A second part fits ``MixtureSVC()``, ``ShareBoostClassifier()`` and
``SuperSparseClassifier()``, which read a column of 3 to 256 categories as indicator
columns, on the same table and on one-hot columns; and, on a generated problem whose 200
category codes (sorted names) say nothing of their effects (``y = x0 + e[c] + noise > 0``,
``e ~ N(0, 2)``, 3,000 training and 5,000 test rows), every classifier on the table
beside one-hot logistic regression.

Test error %, fit seconds, the count of bases per feature the model used. Run
``STREAMLEARN_DATA=../shared/data python bench/categories.py`` (a few minutes;
``--quick``: 8,000 training rows); results go to ``bench/results/categories.json``.
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
from out_of_the_box import _adult_table, data_dir, load_adult

RESULTS_DIR = Path(__file__).resolve().parent / "results"
QUICK_ROWS = 8000


def tables() -> tuple[Any, np.ndarray, Any, np.ndarray]:
    """Adult's train and test tables with the string columns as pandas categories (the
    training file's categories)."""
    import pandas as pd

    train, y = _adult_table(data_dir() / "adult.data.gz")
    test, yt = _adult_table(data_dir() / "adult.test.gz")
    for column in train.columns:
        if not pd.api.types.is_numeric_dtype(train[column]):
            categories = sorted(train[column].unique())
            train[column] = pd.Categorical(train[column], categories=categories)
            test[column] = pd.Categorical(test[column], categories=categories)
    return train, y, test, yt


#: Categories, training rows and test rows of the generated problem.
GENERATED = (200, 3000, 5000)


def generated_tables() -> tuple[Any, np.ndarray, Any, np.ndarray]:
    """The generated problem: a numeric ``x0`` and a categorical ``cat`` whose effects
    ``N(0, 2)`` (drawn apart from the rows) are unrelated to the order of its names."""
    import pandas as pd

    k, n_train, n_test = GENERATED
    effect = np.random.default_rng(99).normal(0.0, 2.0, k)
    names = np.array([f"c{i:03d}" for i in range(k)])
    rng = np.random.default_rng(0)
    code, x0 = rng.integers(0, k, n_train + n_test), rng.normal(size=n_train + n_test)
    frame = pd.DataFrame({"x0": x0, "cat": pd.Categorical(names[code], categories=names)})
    y = (x0 + effect[code] + 0.5 * rng.normal(size=x0.size) > 0).astype(int)
    return frame.iloc[:n_train], y[:n_train], frame.iloc[n_train:], y[n_train:]


def one_hot(frame: Any) -> np.ndarray:
    """Indicator columns of every categorical column (its categories' order), numbers as
    they are."""
    import pandas as pd

    return pd.get_dummies(frame, dtype=np.float32).to_numpy(np.float32)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_ROWS:,d} training rows")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="results directory")
    args = parser.parse_args(argv)
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import LinearSVC

    from streamlearn.models import (
        AdditiveSVC,
        MixtureSVC,
        ShareBoostClassifier,
        SuperSparseClassifier,
    )

    started = time.perf_counter()
    train, y, test, yt = tables()
    X, _, Xt, _ = load_adult(data_dir())
    if args.quick:
        train, y, X = train.iloc[:QUICK_ROWS], y[:QUICK_ROWS], X[:QUICK_ROWS]
    methods: list[tuple[str, Any, str]] = [
        ("AdditiveSVC(), categories", AdditiveSVC(progress=False), "table"),
        ("AdditiveSVC(n_bases=16), categories", AdditiveSVC(n_bases=16, progress=False),
         "table"),
        ("AdditiveSVC(n_bases=48), categories", AdditiveSVC(n_bases=48, progress=False),
         "table"),
        ("AdditiveSVC(), one-hot columns", AdditiveSVC(progress=False), "one-hot"),
        ("HistGradientBoostingClassifier(categorical_features='from_dtype')",
         HistGradientBoostingClassifier(categorical_features="from_dtype"), "table"),
        ("LinearSVC, standardised one-hot", make_pipeline(StandardScaler(), LinearSVC()),
         "one-hot"),
    ]
    try:
        from lightgbm import LGBMClassifier

        methods.append(("LightGBM, categories", LGBMClassifier(verbose=-1), "table"))
    except ImportError:
        pass
    for name, cls in (("MixtureSVC()", MixtureSVC), ("ShareBoostClassifier()",
                                                     ShareBoostClassifier),
                      ("SuperSparseClassifier()", SuperSparseClassifier)):
        methods += [(f"{name}, categories", cls(progress=False), "table"),
                    (f"{name}, one-hot columns", cls(progress=False), "one-hot")]
    g_train, g_y, g_test, g_yt = generated_tables()
    generated: list[tuple[str, Any, str]] = [
        (f"{name}, generated categories", model, "generated")
        for name, model in (("AdditiveSVC()", AdditiveSVC(progress=False)),
                            ("MixtureSVC()", MixtureSVC(progress=False)),
                            ("ShareBoostClassifier()", ShareBoostClassifier(progress=False)),
                            ("SuperSparseClassifier()", SuperSparseClassifier(progress=False)))]
    generated.append(("LogisticRegression, standardised one-hot, generated",
                      make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)),
                      "generated one-hot"))
    rows = []
    for label, model, form in methods + generated:
        A, At, y_fit, y_test = {
            "table": (train, test, y, yt), "one-hot": (X, Xt, y, yt),
            "generated": (g_train, g_test, g_y, g_yt),
            "generated one-hot": (one_hot(g_train), one_hot(g_test), g_y, g_yt)}[form]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.perf_counter()
            model.fit(A, y_fit)
            fit_s = time.perf_counter() - t0
            error = 100.0 * float(np.mean(model.predict(At) != y_test))
        row = {"method": label, "input": form, "test_error_pct": error, "fit_s": fit_s,
               "n_bases": getattr(model, "n_bases_", None)}
        rows.append(row)
        print(f"{label:66s} {error:6.2f} %  {fit_s:6.2f} s  bases {row['n_bases']}",
              flush=True)
    report = {
        "benchmark": "categories", "machine": machine_info(),
        "versions": library_versions(("numpy", "numba", "pandas", "scikit-learn", "lightgbm",
                                      "streamlearn")),
        "settings": {"dataset": "adult", "n_train": len(y), "n_test": len(yt),
                     "quick": bool(args.quick),
                     "generated": dict(zip(("categories", "n_train", "n_test"), GENERATED,
                                           strict=True))},
        "results": rows, "total_runtime_s": time.perf_counter() - started,
        "title": "Categorical columns (adult as a table)",
        "summary": ("Test error on UCI adult with its categorical columns as categories, "
                    "against one-hot columns and the boosters' categorical support."),
        "tables": [{"title": "test error and fit time",
                    "columns": ["method", "input", "test error %", "fit s", "bases"],
                    "rows": [[r["method"], r["input"], round(r["test_error_pct"], 2),
                              round(r["fit_s"], 2), r["n_bases"]] for r in rows]}],
    }
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "categories.json"
    path.write_text(json.dumps(report, indent=2) + "\n")
    print(f"results in {path}")


if __name__ == "__main__":
    main()
