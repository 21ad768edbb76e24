"""Units: each model's test error on raw features against [0, 1]-scaled ones, no scaler.

Every model is fitted with its defaults twice on the same rows: on the features as stored,
and on the features mapped to [0, 1] by the training rows' minimum and maximum (the test rows
through the same map). A model whose fit does not depend on the features' units gives the
same error both ways. Classifiers run on the provided splits of satimage, pendigits, shuttle,
adult and ijcnn1 (at most ``MAX_TRAIN`` training rows, a seeded subset; the two-class
``SparseJSBoostClassifier`` on the two-class sets only); ``SparsePPRRegressor`` on a
generated problem, ``y = (x1 + x2)^2 / 2 + sin(x1 - x2) + noise`` over five standard normal
features, with its features multiplied by ``RAW_SCALES`` as the "raw" units.

Run ``python bench/units.py`` (``STREAMLEARN_DATA`` as for the other scripts; a few minutes
on 2 cores, most of it SpJSBoost on adult) or ``--quick`` (satimage and adult, 2,000 training
rows); results go to ``bench/results/units.json``. ``--seeds N`` fits every classifier with
``random_state`` 0 to ``N - 1`` both ways on the same rows: ``raw`` and ``unit_interval`` are
then the means over the seeds, beside each seed's errors, their standard deviations and the
standard error of the mean paired difference. A model that draws at random (k-means
centres, prototypes, row orders) lands on a different model for each seed, and the float32
rounding of rescaled features acts like another draw: the seeds tell a difference of units
from that spread.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import warnings
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine_info import library_versions, machine_info
from out_of_the_box import load

RESULTS_DIR = Path(__file__).resolve().parent / "results"
MAX_TRAIN = 8000
QUICK_TRAIN = 2000
QUICK_DATASETS = ("satimage", "adult")
SEED = 0
DATASETS = ("satimage", "pendigits", "shuttle", "adult", "ijcnn1")
BINARY = ("adult", "ijcnn1")
RAW_SCALES = np.array([1000.0, 0.01, 1.0, 50.0, 0.2], dtype=np.float32)


def classifiers(binary: bool) -> dict[str, Any]:
    from streamlearn.models import (
        AdditiveSVC,
        MixtureSVC,
        ShareBoostClassifier,
        SparseJSBoostClassifier,
        SuperSparseClassifier,
    )

    models: dict[str, Any] = {"AdditiveSVC": AdditiveSVC,
                              'AdditiveSVC(embedding="linear")': partial(AdditiveSVC,
                                                                         embedding="linear"),
                              'AdditiveSVC(embedding="linear", zero_preserving=True)': partial(
                                  AdditiveSVC, embedding="linear", zero_preserving=True),
                              "MixtureSVC": MixtureSVC,
                              "ShareBoostClassifier": ShareBoostClassifier,
                              "SuperSparseClassifier": SuperSparseClassifier}
    if binary:
        models["SparseJSBoostClassifier"] = SparseJSBoostClassifier
    return models


def unit_interval(X: np.ndarray, Xt: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Both arrays through the training rows' min-max map to [0, 1]."""
    lo, hi = X.min(axis=0), X.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    return ((X - lo) / span).astype(np.float32), ((Xt - lo) / span).astype(np.float32)


def counted_fit(model: Any, X: np.ndarray, y: np.ndarray) -> tuple[Any, float, int]:
    """The fitted model, its fit seconds and the ConvergenceWarnings it raised (counted and
    recorded, not hidden)."""
    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        t0 = time.perf_counter()
        model.fit(X, y)
        seconds = time.perf_counter() - t0
    return model, seconds, sum(issubclass(w.category, ConvergenceWarning) for w in caught)


def error_pct(model: Any, X: np.ndarray, y: np.ndarray, Xt: np.ndarray,
              yt: np.ndarray) -> tuple[float, float, int]:
    model, seconds, warned = counted_fit(model, X, y)
    return 100.0 * (1.0 - float(model.score(Xt, yt))), seconds, warned


def units_row(name: str, label: str,
              fits: list[tuple[tuple[float, float, int], tuple[float, float, int]]],
              n_train: int) -> dict[str, Any]:
    """One dataset and model: each seed's (raw, [0, 1]) fits as (error %, seconds, warnings);
    with several seeds the means, spreads and each seed's figures."""
    raw = np.array([r[0] for r, _ in fits])
    scaled = np.array([s[0] for _, s in fits])
    row: dict[str, Any] = {
        "dataset": name, "model": label, "metric": "test error %",
        "raw": float(raw.mean()), "unit_interval": float(scaled.mean()),
        "difference": float((raw - scaled).mean()),
        "fit_s": [t for r, s in fits for t in (r[1], s[1])],
        "convergence_warnings": [w for r, s in fits for w in (r[2], s[2])],
        "n_train": n_train}
    if len(fits) > 1:
        diff = raw - scaled
        row.update({"seeds": len(fits), "raw_per_seed": raw.tolist(),
                    "unit_interval_per_seed": scaled.tolist(),
                    "raw_sd": float(raw.std(ddof=1)), "unit_interval_sd": float(scaled.std(ddof=1)),
                    "difference_standard_error": float(diff.std(ddof=1) / np.sqrt(len(diff)))})
    return row


def regression_problem(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    X = rng.normal(size=(n, 5))
    y = (X[:, 0] + X[:, 1]) ** 2 / 2 + np.sin(X[:, 0] - X[:, 1]) + 0.3 * rng.normal(size=n)
    return X.astype(np.float32), y


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help=f"{', '.join(QUICK_DATASETS)} at {QUICK_TRAIN} training rows")
    parser.add_argument("--datasets", default=None, help="comma-separated dataset names")
    parser.add_argument("--models", default=None,
                        help="comma-separated classifier labels (default: all, and the "
                             "regression part)")
    parser.add_argument("--seeds", type=int, default=1,
                        help="fit every classifier with random_state 0..N-1 and report means")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="results directory")
    args = parser.parse_args(argv)
    # commas inside a label's parentheses belong to it
    chosen = (None if args.models is None
              else set(re.split(r",(?![^()]*\))", args.models)))
    names = (args.datasets.split(",") if args.datasets
             else list(QUICK_DATASETS if args.quick else DATASETS))
    max_train = QUICK_TRAIN if args.quick else MAX_TRAIN
    rows = []
    for name in names:
        X, y, Xt, yt = load(name)
        if len(y) > max_train:
            pick = np.sort(np.random.default_rng(SEED).permutation(len(y))[:max_train])
            X, y = X[pick], y[pick]
        S, St = unit_interval(X, Xt)
        for label, cls in classifiers(name in BINARY).items():
            if chosen is not None and label not in chosen:
                continue
            if args.seeds == 1:  # the model's defaults, random_state included
                fits = [(error_pct(cls(progress=False), X, y, Xt, yt),
                         error_pct(cls(progress=False), S, y, St, yt))]
            else:
                fits = [(error_pct(cls(progress=False, random_state=seed), X, y, Xt, yt),
                         error_pct(cls(progress=False, random_state=seed), S, y, St, yt))
                        for seed in range(args.seeds)]
            rows.append(units_row(name, label, fits, len(y)))
            row = rows[-1]
            print(f"{name:10s} {label:26s} raw {row['raw']:6.2f}  [0,1] "
                  f"{row['unit_interval']:6.2f}  ConvergenceWarnings "
                  f"{sum(row['convergence_warnings'][0::2])}/"
                  f"{sum(row['convergence_warnings'][1::2])}", flush=True)
    if chosen is not None and "SparsePPRRegressor" not in chosen:
        write_report(args, max_train, rows)
        return
    from streamlearn.models import SparsePPRRegressor

    rng = np.random.default_rng(SEED)
    X, y = regression_problem(3000, rng)
    Xt, yt = regression_problem(3000, rng)
    mse, warned = {}, []
    for units, scales in (("raw", RAW_SCALES), ("unit_interval", None)):
        A, At = (X * scales, Xt * scales) if scales is not None else unit_interval(X, Xt)
        model, _, count = counted_fit(SparsePPRRegressor(progress=False), A, y)
        mse[units] = float(np.mean((model.predict(At) - yt) ** 2))
        warned.append(count)
    rows.append({"dataset": "generated regression", "model": "SparsePPRRegressor",
                 "metric": "test MSE", **mse, "difference": mse["raw"] - mse["unit_interval"],
                 "convergence_warnings": warned,
                 "raw_scales": RAW_SCALES.tolist(), "n_train": 3000})
    print(f"generated  SparsePPRRegressor         raw MSE {mse['raw']:.4f}  [0,1] MSE "
          f"{mse['unit_interval']:.4f}")
    write_report(args, max_train, rows)


def write_report(args: argparse.Namespace, max_train: int, rows: list[dict[str, Any]]) -> None:
    """Write ``units.json`` under ``args.out``."""
    report = {"benchmark": "units", "machine": machine_info(),
              "versions": library_versions(("numpy", "numba", "streamlearn")),
              "quick": bool(args.quick), "max_train": max_train, "seed": SEED,
              "seeds": args.seeds,
              "models": args.models, "results": rows}
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "units.json"
    path.write_text(json.dumps(report, indent=2) + "\n")
    print(f"results in {path}")


if __name__ == "__main__":
    main()
