"""Missing values: ``nan_policy="impute"`` against the peers' own handling of them.

Datasets (the provided train/test splits, at most 20,000 training rows, a seeded subset):

- ``adult``: UCI adult as a table, its ``?`` entries (in workclass, occupation and
  native country: 7 % of the training rows) read as missing values, its text columns as
  categories;
- ``<set>_mcar``: satimage, pendigits and ijcnn1 with 20 % of every feature's values
  removed completely at random (train and test alike);
- ``<set>_mnar``: the same sets where a value above its feature's 80th percentile (of the
  training rows) goes missing with probability 0.5, so that a missing value says the
  value was high.

Two more methods read the training rows from a parquet file (written to a temporary
directory first, not timed): ``additive_file`` fits ``AdditiveSVC()`` with ``fit``'s
default (``nan_policy="auto"``: read as ``"raise"``, and on finding a NaN started again
under ``"impute"``), ``additive_file_impute`` with ``nan_policy="impute"``; their passes
and fit times show what the default's first try costs.

Methods: ``AdditiveSVC()``, ``MixtureSVC()`` and ``SuperSparseClassifier()`` fitted with
``nan_policy="impute"`` (:mod:`streamlearn.features.missing_values`: median and an
indicator column); ``AdditiveSVC()`` fitted with ``nan_policy="drop"`` (the rows with a
missing value left out; test rows filled with the training medians, as no row may be
dropped there); LightGBM, XGBoost (``hist``) and ``HistGradientBoostingClassifier``, which
read NaN themselves; and ``LinearSVC`` (``C`` by 3-fold CV) after scikit-learn's
``SimpleImputer(strategy="median", add_indicator=True)`` and ``StandardScaler``. The
peers read adult's categories one-hot, a missing category as its own indicator column.

Run ``python bench/missing_values.py`` (about 3 minutes on 2 cores; ``--datasets``,
``--methods`` to choose, ``--quick`` for adult and satimage with three methods,
``--median-only`` to fill every gap with its column's median, the rule's first step alone;
``STREAMLEARN_DATA`` names the data directory). Prints a table of test error % and fit
times and saves ``bench/results/missing_values.json`` (or ``--out DIR``).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine_info import library_versions, machine_info
from out_of_the_box import _adult_table, data_dir, load, subsample

from streamlearn import DataError

RESULTS = Path(__file__).resolve().parent / "results"
SEED = 0
MAX_TRAIN_ROWS = 20_000
MCAR_SHARE = 0.2
MNAR_QUANTILE = 0.8
MNAR_SHARE = 0.5
DATASETS = ("adult", "satimage_mcar", "satimage_mnar", "pendigits_mcar", "pendigits_mnar",
            "ijcnn1_mcar", "ijcnn1_mnar")
METHODS = ("additive", "mixture", "supersparse", "additive_drop", "additive_file",
           "additive_file_impute", "lightgbm", "xgboost", "hgb", "linearsvc")
STREAMLEARN = ("additive", "mixture", "supersparse", "additive_drop", "additive_file",
               "additive_file_impute")
FROM_FILE = ("additive_file", "additive_file_impute")
QUICK_DATASETS = ("adult", "satimage_mnar")
QUICK_METHODS = ("additive", "lightgbm", "hgb")


def with_missing(name: str) -> tuple[Any, np.ndarray, Any, np.ndarray]:
    """Train and test rows of a dataset with missing values (NaN), labels coded 0..K-1."""
    if name == "adult":
        train, y = _adult_table(data_dir() / "adult.data.gz")
        test, yt = _adult_table(data_dir() / "adult.test.gz")
        import pandas as pd

        train, test = (frame.replace("?", None) for frame in (train, test))
        for column in train.columns:
            if not pd.api.types.is_numeric_dtype(train[column]):
                kinds = sorted(train[column].dropna().unique())
                train[column] = pd.Categorical(train[column], categories=kinds)
                test[column] = pd.Categorical(test[column], categories=kinds)
        pick = np.sort(np.random.default_rng(SEED).permutation(len(y))[:MAX_TRAIN_ROWS])
        return train.iloc[pick].reset_index(drop=True), y[pick], test, yt
    base, pattern = name.rsplit("_", 1)
    X, y, Xt, yt = load(base)
    X, y = subsample(X, y, MAX_TRAIN_ROWS, SEED)
    classes = np.unique(y)
    y, yt = np.searchsorted(classes, y), np.searchsorted(classes, yt)
    rng = np.random.default_rng(SEED)
    X, Xt = X.copy(), Xt.copy()
    if pattern == "mcar":
        for rows in (X, Xt):
            rows[rng.random(rows.shape) < MCAR_SHARE] = np.nan
    else:
        high = np.quantile(X, MNAR_QUANTILE, axis=0)
        for rows in (X, Xt):
            rows[(rows > high) & (rng.random(rows.shape) < MNAR_SHARE)] = np.nan
    return X, y, Xt, yt


def one_hot(train: Any, test: Any) -> tuple[np.ndarray, np.ndarray]:
    """A table's categories as indicator columns (a missing one its own), numbers as
    they are (NaN kept): the peers' input."""
    import pandas as pd

    if isinstance(train, np.ndarray):
        return train, test
    categorical = [c for c in train.columns if isinstance(train[c].dtype, pd.CategoricalDtype)]
    X = pd.get_dummies(train, columns=categorical, dummy_na=True, dtype=np.float32)
    Xt = pd.get_dummies(test, columns=categorical, dummy_na=True, dtype=np.float32).reindex(
        columns=X.columns, fill_value=0.0)
    return X.to_numpy(np.float32), Xt.to_numpy(np.float32)


def method(key: str) -> Any:
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.impute import SimpleImputer
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import LinearSVC

    from streamlearn.models import AdditiveSVC, MixtureSVC, SuperSparseClassifier

    if key in ("additive", "additive_drop", *FROM_FILE):
        return AdditiveSVC(progress=False)
    if key == "mixture":
        return MixtureSVC(progress=False)
    if key == "supersparse":
        return SuperSparseClassifier(progress=False)
    if key == "lightgbm":
        from lightgbm import LGBMClassifier

        return LGBMClassifier(random_state=SEED, verbose=-1)
    if key == "xgboost":
        from xgboost import XGBClassifier

        return XGBClassifier(tree_method="hist", random_state=SEED)
    if key == "hgb":
        return HistGradientBoostingClassifier(random_state=SEED)
    if key == "linearsvc":
        pipe = make_pipeline(SimpleImputer(strategy="median", add_indicator=True),
                             StandardScaler(), LinearSVC())
        return GridSearchCV(pipe, {"linearsvc__C": [0.01, 0.1, 1.0, 10.0]}, cv=3)
    raise ValueError(key)


def run(name: str, key: str) -> dict[str, Any]:
    X, y, Xt, yt = with_missing(name)
    missing_pct = round(100.0 * missing_rows(X), 1)
    if key not in STREAMLEARN:
        X, Xt = one_hot(X, Xt)
    model = method(key)
    options: dict[str, Any] = {}
    if key in STREAMLEARN and key != "additive_file":
        options["nan_policy"] = "drop" if key == "additive_drop" else "impute"
    with tempfile.TemporaryDirectory() as scratch:
        data: tuple[Any, ...] = (X, y)
        if key in FROM_FILE:  # the training rows as a parquet file, the label a column
            import pandas as pd

            table = X.copy() if isinstance(X, pd.DataFrame) else pd.DataFrame(
                X, columns=[f"x{j}" for j in range(X.shape[1])])
            table["label"] = y
            table.to_parquet(Path(scratch) / "train.parquet")
            data = (str(Path(scratch) / "train.parquet"), "label")
        started = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model.fit(*data, **options)
        fit_s = time.perf_counter() - started
    if key == "additive_drop":  # no test row may be dropped: the training medians
        Xt = fill_medians(X, Xt)
    if key in FROM_FILE and isinstance(Xt, np.ndarray):  # the file's column names
        import pandas as pd

        Xt = pd.DataFrame(Xt, columns=[f"x{j}" for j in range(Xt.shape[1])])
    error = 100.0 * float(np.mean(np.asarray(model.predict(Xt)) != yt))
    out: dict[str, Any] = {"test_error_pct": round(error, 2), "fit_s": round(fit_s, 2),
                           "train_rows": len(y),
                           "missing_train_rows_pct": missing_pct,
                           "warnings": sorted({str(w.message)[:160] for w in caught})}
    if key in STREAMLEARN:
        out["passes"] = round(float(model.n_passes_), 2)
        out["n_train"] = int(getattr(model, "n_train_", len(y)))
    if key in ("additive", "mixture", "supersparse", *FROM_FILE):
        out["indicated_columns"] = len(model.missing_values_.columns)
    return out


def missing_rows(X: Any) -> float:
    import pandas as pd

    frame = X if isinstance(X, pd.DataFrame) else pd.DataFrame(X)
    return float(frame.isna().any(axis=1).mean())


def fill_medians(X: Any, Xt: Any) -> Any:
    import pandas as pd

    if isinstance(Xt, pd.DataFrame):
        out = Xt.copy()
        for column in out.columns:
            if isinstance(out[column].dtype, pd.CategoricalDtype):
                out[column] = out[column].fillna(X[column].mode().iloc[0])
            else:
                out[column] = out[column].fillna(X[column].median())
        return out
    return np.where(np.isnan(Xt), np.nanmedian(X, axis=0), Xt).astype(np.float32)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default=None)
    parser.add_argument("--methods", default=None)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--median-only", action="store_true",
                        help="fill every gap with its column's median (no regression): "
                        "the rule's first step alone, for comparison")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    started = time.perf_counter()
    if args.median_only:
        import streamlearn.engine.missing_counts as missing_counts

        missing_counts.MAX_REGRESSION_COLUMNS = 0
    results: dict[str, dict[str, Any]] = {}
    methods = (args.methods.split(",") if args.methods else
               list(QUICK_METHODS if args.quick else METHODS))
    datasets = (args.datasets.split(",") if args.datasets else
                list(QUICK_DATASETS if args.quick else DATASETS))
    for name in datasets:
        results[name] = {}
        for key in methods:
            try:
                results[name][key] = run(name, key)
            except ImportError as exc:
                results[name][key] = {"error": f"not installed: {exc}"}
            except DataError as exc:  # "drop" with a missing value on every row
                results[name][key] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
            cell = results[name][key]
            print(f"{name:16s} {key:14s} " + (
                f"{cell['test_error_pct']:6.2f} % {cell['fit_s']:7.2f} s" if "error" not in
                cell else cell["error"][:100]), flush=True)
    print()
    print("| dataset | " + " | ".join(methods) + " |")
    print("|---|" + "---|" * len(methods))
    for name, row in results.items():
        cells = [f"{row[k]['test_error_pct']:.2f}" if "test_error_pct" in row[k] else "-"
                 for k in methods]
        print(f"| {name} | " + " | ".join(cells) + " |")
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "missing_values.json"
    rows = [[name] + [row[k].get("test_error_pct", "-") for k in methods]
            for name, row in results.items()]
    path.write_text(json.dumps({
        "benchmark": "missing_values",
        "title": "Missing values",
        "summary": ("Test error % with missing values: nan_policy='impute' against the "
                    "boosters' own handling and an imputed linear SVM."),
        "machine": machine_info(),
        "versions": library_versions(("streamlearn", "numpy", "numba", "scikit-learn",
                                      "lightgbm", "xgboost", "pandas")),
        "settings": {"max_train_rows": MAX_TRAIN_ROWS, "seed": SEED, "quick": args.quick,
                     "median_only": args.median_only,
                     "mcar_share": MCAR_SHARE, "mnar_quantile": MNAR_QUANTILE,
                     "mnar_share": MNAR_SHARE},
        "total_runtime_s": round(time.perf_counter() - started, 1),
        "tables": [{"title": "test error %", "columns": ["dataset", *methods],
                    "rows": rows}],
        "results": results}, indent=1) + "\n")
    print(f"saved {path}")


if __name__ == "__main__":
    main()
