"""B-spline knots at the data's quantiles against uniform knots, over several seeds.

``AdditiveSVC(knots="quantile")`` places its knots half way between the uniform grid and
the quantiles of the describe sample (:mod:`streamlearn.features.knots`; the default is
``knots="uniform"``). This benchmark fits it both ways on every classification
dataset of ``bench/out_of_the_box.py`` (the same loading, the same seeded subset of at most
20,000 training rows, the provided test split), and on the generated problem of
``bench/predict_throughput.py`` (``gaussian``: 20,000 training rows, 100,000 test rows, 32
standard normal features of which 26 carry nothing), each with ``random_state`` 0 to
``--seeds - 1``: the seed orders the rows PEGASOS visits, and on these datasets it moves a
test error by up to a few tenths of a point, as much as the knots do. The table gives each
setting's mean and standard deviation over the seeds, and the fit time (after a warm-up
fit on the same rows, so that the kernels it calls are compiled and loaded).

Run ``STREAMLEARN_DATA=../shared/data python bench/knots.py`` (about 10 minutes on 2
cores; ``--datasets`` and ``--seeds`` to do less; ``--quick``: usps, satimage and spirals
on 2,000 rows, two seeds). Results go to ``bench/results/knots.json``.
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
from gaussian_rows import gaussian_rows
from machine_info import library_versions, machine_info
from out_of_the_box import (
    DATASETS,
    QUICK_DATASETS,
    QUICK_TRAIN_ROWS,
    SEED,
    encode_labels,
    load,
    subsample,
)

RESULTS_DIR = Path(__file__).resolve().parent / "results"
MAX_TRAIN_ROWS = 20_000
GAUSSIAN_TEST_ROWS = 100_000
KNOTS = ("uniform", "quantile")


def load_any(name: str, max_rows: int) -> tuple[np.ndarray, ...]:
    """A dataset of ``bench/out_of_the_box.py`` (its seeded subset), or ``gaussian``."""
    if name == "gaussian":
        X, y, _ = gaussian_rows(max_rows, SEED)
        Xt, yt, _ = gaussian_rows(GAUSSIAN_TEST_ROWS, SEED + 1)
        return X, y, Xt, yt
    X, y, Xt, yt = load(name)
    X, y = subsample(X, y, max_rows, SEED, shuffle=True)
    y, yt, _ = encode_labels(y, yt)
    return X, y, Xt, yt


def run(name: str, seeds: int, max_rows: int) -> dict[str, Any]:
    """Every seed's test error and fit time for each knots setting on one dataset."""
    from sklearn.exceptions import ConvergenceWarning

    from streamlearn.models import AdditiveSVC

    X, y, Xt, yt = load_any(name, max_rows)
    for knots in KNOTS:  # kernels compiled (or loaded) before the timed fits
        AdditiveSVC(knots=knots, progress=False).fit(X, y)
    row: dict[str, Any] = {"dataset": name, "n_train": len(y), "n_test": len(yt),
                           "n_features": int(X.shape[1])}
    for knots in KNOTS:
        errors, times, warned, moved = [], [], [], None
        for seed in range(seeds):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", ConvergenceWarning)
                started = time.perf_counter()
                model = AdditiveSVC(knots=knots, random_state=seed, progress=False).fit(X, y)
                times.append(time.perf_counter() - started)
            warned.append(sum(issubclass(w.category, ConvergenceWarning) for w in caught))
            errors.append(100.0 * float(np.mean(model.predict(Xt) != yt)))
            table = model.feature_map_.warp_
            moved = int(table[3]) if table.shape[0] else 0
        row[knots] = {"test_error_pct": errors, "fit_s": times,
                      "convergence_warnings": warned,
                      "mean_error_pct": float(np.mean(errors)),
                      "std_error_pct": float(np.std(errors)),
                      "mean_fit_s": float(np.mean(times)), "features_with_moved_knots": moved}
    return row


def streamlearn_commit() -> str | None:
    """The commit of the streamlearn checkout imported (``+`` when its files differ)."""
    import streamlearn

    root = Path(streamlearn.__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain",
                                "streamlearn"], capture_output=True, text=True,
                               check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("+" if dirty else "")


def table(rows: list[dict[str, Any]], seeds: int) -> dict[str, Any]:
    """Mean and standard deviation of the test error over the seeds, and the fit time."""
    body = []
    for r in rows:
        u, q = r["uniform"], r["quantile"]
        body.append([r["dataset"], r["n_features"], q["features_with_moved_knots"],
                     f"{u['mean_error_pct']:.2f} ± {u['std_error_pct']:.2f}",
                     f"{q['mean_error_pct']:.2f} ± {q['std_error_pct']:.2f}",
                     round(q["mean_error_pct"] - u["mean_error_pct"], 2),
                     round(u["mean_fit_s"], 2), round(q["mean_fit_s"], 2),
                     f"{sum(u['convergence_warnings'])}/{sum(q['convergence_warnings'])}"])
    return {"title": f"AdditiveSVC() test error %, mean ± sd over {seeds} seeds",
            "columns": ["dataset", "features", "features whose knots moved",
                        'knots="uniform"', 'knots="quantile"', "difference",
                        "uniform fit s", "quantile fit s",
                        "ConvergenceWarnings (uniform/quantile)"],
            "rows": body}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help=f"{','.join(QUICK_DATASETS)} on {QUICK_TRAIN_ROWS:,} rows, 2 seeds")
    parser.add_argument("--datasets", help="comma-separated datasets (default: all; "
                        "'gaussian' is the generated problem of predict_throughput.py)")
    parser.add_argument("--seeds", type=int, help="random_state 0 .. seeds - 1 (default 5)")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="results directory")
    args = parser.parse_args(argv)
    datasets = (args.datasets or ",".join(QUICK_DATASETS if args.quick
                                          else (*DATASETS, "gaussian"))).split(",")
    seeds = args.seeds or (2 if args.quick else 5)
    max_rows = QUICK_TRAIN_ROWS if args.quick else MAX_TRAIN_ROWS
    started = time.perf_counter()
    rows = []
    for name in datasets:
        rows.append(run(name, seeds, max_rows))
        r = rows[-1]
        print(f"{name:14s} uniform {r['uniform']['mean_error_pct']:6.2f}% "
              f"quantile {r['quantile']['mean_error_pct']:6.2f}% "
              f"fit {r['uniform']['mean_fit_s']:6.2f}s / {r['quantile']['mean_fit_s']:6.2f}s",
              flush=True)
    result_table = table(rows, seeds)
    better = [r["dataset"] for r in rows
              if r["quantile"]["mean_error_pct"] < r["uniform"]["mean_error_pct"] - 0.005]
    worse = [r["dataset"] for r in rows
             if r["quantile"]["mean_error_pct"] > r["uniform"]["mean_error_pct"] + 0.005]
    summary = (f"AdditiveSVC(knots='quantile') against uniform knots (the default), "
               f"{seeds} seeds, at most {max_rows:,} training rows: lower mean test error on "
               f"{', '.join(better) or 'none'}; higher on {', '.join(worse) or 'none'}.")
    print(f"\n{summary}")
    result = {"benchmark": "knots", "quick": args.quick, "machine": machine_info(),
              "versions": library_versions(("numpy", "numba", "scikit-learn")),
              "settings": {"datasets": datasets, "seeds": seeds, "max_train_rows": max_rows,
                           "subset_seed": SEED, "streamlearn_commit": streamlearn_commit()},
              "results": rows, "title": "Knots at quantiles against uniform knots",
              "summary": summary, "tables": [result_table],
              "total_runtime_s": time.perf_counter() - started}
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "knots.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(f"results in {path}")


if __name__ == "__main__":
    main()
