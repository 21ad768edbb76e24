"""Rare classes: each classifier with and without ``class_weight="balanced"``, beside the
peers' balanced settings.

Balanced accuracy (the mean recall over the classes) and the recall of the rarest class on
the test rows, for every classifier's defaults and the same with ``class_weight="balanced"``;
the peers, side by side in the same run: scikit-learn's ``LinearSVC`` (``C`` by 3-fold
cross-validation on balanced accuracy, with its ``class_weight="balanced"``, standardised
features) and LightGBM (defaults, ``class_weight="balanced"``). Data: two generated
two-class problems (``make_classification``, 20,000 training and 20,000 test rows, 5 % and
1 % positives, ``class_sep=0.7``), shuttle (seven classes, the rarest with 6 of 43,500
training rows) and ijcnn1 (10 % positives), at most ``MAX_TRAIN`` training rows (a seeded
subset).

Run ``python bench/class_weight.py`` (``STREAMLEARN_DATA`` as for the other scripts; two
minutes on 2 cores) or ``--quick`` (the generated sets at 5,000 training rows);
``--methods SuperSparseClassifier`` for the rows whose names begin so; results go to
``bench/results/class_weight.json``. The warnings of each fit are counted in the results,
not silenced.
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
MAX_TRAIN = 20_000
QUICK_TRAIN = 5_000
SEED = 0
GENERATED = {"generated 5%": 0.05, "generated 1%": 0.01}
DATASETS = (*GENERATED, "shuttle", "ijcnn1")


def generated(share: float, n: int = 20_000
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    from sklearn.datasets import make_classification

    X, y = make_classification(2 * n, 10, n_informative=6, weights=[1 - share],
                               class_sep=0.7, flip_y=0.0, random_state=SEED)
    X = X.astype(np.float32)
    return X[:n], y[:n], X[n:], y[n:]


def ours() -> dict[str, Any]:
    from streamlearn.models import (
        AdditiveSVC,
        MixtureSVC,
        ShareBoostClassifier,
        SuperSparseClassifier,
    )

    return {"AdditiveSVC": AdditiveSVC, "MixtureSVC": MixtureSVC,
            "ShareBoostClassifier": ShareBoostClassifier,
            "SuperSparseClassifier": SuperSparseClassifier}


def peers() -> dict[str, Any]:
    from lightgbm import LGBMClassifier
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import LinearSVC

    return {
        "LinearSVC balanced, C by CV": lambda: GridSearchCV(
            make_pipeline(StandardScaler(), LinearSVC(class_weight="balanced")),
            {"linearsvc__C": [0.01, 0.1, 1.0, 10.0]}, cv=3, scoring="balanced_accuracy"),
        "LightGBM balanced": lambda: LGBMClassifier(class_weight="balanced",
                                                    random_state=SEED, verbose=-1),
    }


def scores(model: Any, X: np.ndarray, y: np.ndarray, Xt: np.ndarray,
           yt: np.ndarray) -> dict[str, Any]:
    from sklearn.metrics import balanced_accuracy_score, recall_score

    started = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # counted and recorded, not hidden
        model.fit(X, y)
    fit_s = time.perf_counter() - started
    warned: dict[str, int] = {}
    for w in caught:
        warned[w.category.__name__] = warned.get(w.category.__name__, 0) + 1
    predicted = model.predict(Xt)
    labels, counts = np.unique(y, return_counts=True)
    rarest = labels[np.argmin(counts)]
    return {"balanced_accuracy": float(balanced_accuracy_score(yt, predicted)),
            "rarest_recall": float(recall_score(yt, predicted, labels=[rarest],
                                                average="macro", zero_division=0)),
            "accuracy": float(np.mean(predicted == yt)), "fit_s": fit_s,
            "rarest_class": rarest.item(), "rarest_train_rows": int(counts.min()),
            "warnings": warned,
            **({"fitted_loss": model.loss_} if hasattr(model, "loss_") else {})}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", default=None, help="comma-separated dataset names")
    parser.add_argument("--quick", action="store_true",
                        help=f"the generated sets only, at {QUICK_TRAIN:,} training rows")
    parser.add_argument("--methods", default="",
                        help="comma-separated beginnings of method names (SuperSparseClassifier: "
                             "its two rows); all methods when empty")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="results directory")
    args = parser.parse_args(argv)
    names = (args.datasets.split(",") if args.datasets
             else list(GENERATED if args.quick else DATASETS))
    chosen = tuple(m.strip() for m in args.methods.split(",") if m.strip())
    rows = []
    for name in names:
        if name in GENERATED:
            X, y, Xt, yt = generated(GENERATED[name], QUICK_TRAIN if args.quick else MAX_TRAIN)
        else:
            X, y, Xt, yt = load(name)
            X, y = subsample(X, y, MAX_TRAIN, SEED, shuffle=True)
        methods: dict[str, Any] = {}
        for label, cls in ours().items():
            methods[f"{label}()"] = lambda cls=cls: cls(progress=False)
            methods[f'{label}(class_weight="balanced")'] = lambda cls=cls: cls(
                progress=False, class_weight="balanced")
        methods.update(peers())
        for label, make in methods.items():
            if chosen and not label.startswith(chosen):
                continue
            row = {"dataset": name, "method": label, "n_train": len(y),
                   **scores(make(), X, y, Xt, yt)}
            rows.append(row)
            print(f"{name:13s} {label:52s} balanced acc {row['balanced_accuracy']:.4f}  "
                  f"rarest recall {row['rarest_recall']:.4f}  fit {row['fit_s']:6.1f} s",
                  flush=True)
    report = {"benchmark": "class_weight", "machine": machine_info(),
              "versions": library_versions(("numpy", "numba", "scikit-learn", "lightgbm",
                                            "streamlearn")),
              "quick": bool(args.quick), "max_train": QUICK_TRAIN if args.quick else MAX_TRAIN,
              "seed": SEED, "methods": list(chosen), "results": rows}
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "class_weight.json"
    path.write_text(json.dumps(report, indent=2) + "\n")
    print(f"results in {path}")


if __name__ == "__main__":
    main()
