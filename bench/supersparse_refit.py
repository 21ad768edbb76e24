"""The classification loss on a fitted super-sparse classifier's own prototypes.

``SuperSparseClassifier`` fits the squared loss to ``+-1`` targets. This asks whether a
classification loss on the same prototypes would do better: for each data set it fits
``SuperSparseClassifier()`` (the defaults) on the 20,000-row subset of
``bench/out_of_the_box.py`` (same seed and row order), takes the similarity columns
``s(x, c_1..p)`` of the fitted model on the training and the test rows, and fits on them
``LinearSVC(loss="squared_hinge", dual=False)`` (one-vs-rest for more than two classes, as
the model's outputs are), ``C`` chosen by 3-fold cross-validation, and once more at ``C =
1 / (2 n lam_)``, the beta-step's own penalty (liblinear also penalises the intercept). For
reference it fits the out-of-the-box table's peer, ``LinearSVC`` after ``StandardScaler``
with ``C`` by 3-fold cross-validation over {0.001, 0.01, 0.1, 1, 10}. Run
``STREAMLEARN_DATA=../shared/data python bench/supersparse_refit.py`` (``--datasets``,
default a9a, adult, satimage, usps, pendigits, shuttle, ijcnn1; about 10 minutes on two
cores); results go to ``bench/results/supersparse_refit.json``.
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
import out_of_the_box as ob
from machine_info import library_versions, machine_info

RESULTS_DIR = Path(__file__).resolve().parent / "results"
DATASETS = ("a9a", "adult", "satimage", "usps", "pendigits", "shuttle", "ijcnn1")
TRAIN_ROWS = 20_000
REFIT_C_GRID = (0.01, 0.1, 1.0, 10.0, 100.0, 1e3, 1e4)
PEER_C_GRID = (0.001, 0.01, 0.1, 1.0, 10.0)


def similarity_columns(model: Any, X: np.ndarray) -> np.ndarray:
    """``s(x, c_1..p)`` of a fitted RBF model on the rows ``X``, as its decision function
    computes them (the same mapping of the features, standardisation and width)."""
    from streamlearn.solvers.prototypes import rbf_similarities

    rows = model._mapped_rows(model._check_X(X))
    return rbf_similarities(rows, model._mapped_prototypes(), float(model.gamma_),
                            model._standardiser().scale)


def error(model: Any, X: np.ndarray, y: np.ndarray) -> float:
    return round(100.0 * float(np.mean(model.predict(X) != y)), 2)


def run(name: str) -> dict[str, Any]:
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import LinearSVC

    from streamlearn import SuperSparseClassifier

    X, y, Xt, yt = ob.load(name)
    X, y = ob.subsample(X, y, TRAIN_ROWS, ob.SEED, shuffle=True)
    row: dict[str, Any] = {"dataset": name, "n_train": len(y), "n_test": len(yt),
                           "n_classes": len(np.unique(y))}
    started = time.perf_counter()
    model = SuperSparseClassifier(progress=False).fit(X, y)
    row.update(fit_s=round(time.perf_counter() - started, 1), p=int(model.n_prototypes_),
               gamma=float(model.gamma_), lam=float(model.lam_),
               squared_error_pct=error(model, Xt, yt))
    S, St = similarity_columns(model, X), similarity_columns(model, Xt)
    beta, intercept = model._outputs()  # the columns give the model's own decision
    assert np.allclose((St @ beta + intercept).squeeze(),
                       model.decision_function(Xt), atol=1e-6)
    svm = LinearSVC(loss="squared_hinge", dual=False, max_iter=10_000)
    search = GridSearchCV(svm, {"C": list(REFIT_C_GRID)}, cv=3).fit(S, y)
    row.update(refit_cv_C=float(search.best_params_["C"]),
               refit_cv_error_pct=error(search, St, yt))
    C = 1.0 / (2.0 * len(y) * model.lam_)
    row.update(refit_lam_C=C, refit_lam_error_pct=error(
        LinearSVC(loss="squared_hinge", dual=False, C=C, max_iter=10_000).fit(S, y), St, yt))
    peer = GridSearchCV(make_pipeline(StandardScaler(), LinearSVC(dual=False)),
                        {"linearsvc__C": list(PEER_C_GRID)}, cv=3).fit(X, y)
    row["linearsvc_error_pct"] = error(peer, Xt, yt)
    print(f"{name:10} p={row['p']:4} squared {row['squared_error_pct']:6.2f} %  squared "
          f"hinge, C by CV {row['refit_cv_error_pct']:6.2f} %, at lam "
          f"{row['refit_lam_error_pct']:6.2f} %  LinearSVC {row['linearsvc_error_pct']:6.2f} %",
          flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--out", type=Path, default=RESULTS_DIR)
    args = parser.parse_args()
    started = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results = [run(name) for name in args.datasets.split(",")]
    report = {"benchmark": "supersparse_refit", "machine": machine_info(),
              "versions": library_versions(("numpy", "numba", "scikit-learn", "streamlearn")),
              "train_rows": TRAIN_ROWS, "seed": ob.SEED, "refit_C_grid": REFIT_C_GRID,
              "peer_C_grid": PEER_C_GRID, "results": results,
              "warnings": sorted({f"{w.category.__name__}: {w.message}" for w in caught}),
              "total_runtime_s": round(time.perf_counter() - started, 1)}
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "supersparse_refit.json"
    path.write_text(json.dumps(report, indent=2, default=float) + "\n")
    print(f"results in {path}")


if __name__ == "__main__":
    main()
