"""The pair grid chosen on held-out rows against the fixed 8 x 8 grid, over several seeds.

``AdditiveSVC(pair_bases="auto")`` (the default) trains its pairs on an 8 x 8 grid, then on
grids of 12, 18 and 27 bases per axis in turn, each kept while it lowers the calibrated
log-loss of the held-out calibration rows. This benchmark fits ``AdditiveSVC()`` and
``AdditiveSVC(pair_bases=8)`` (the earlier default) on the classification datasets of
``bench/out_of_the_box.py`` (the same loading, the same seeded subset of at most 20,000
training rows, the provided test split), each with ``random_state`` 0 to ``--seeds - 1``
(the seed orders the rows PEGASOS visits and draws the held-out rows; it moves a test error
by a few tenths of a point). The table gives each setting's mean and standard deviation of
the test error over the seeds, its fit time (after a warm-up fit on the same rows, so that
the kernels it calls are compiled and loaded) and the grids ``"auto"`` kept.

Run ``STREAMLEARN_DATA=../shared/data python bench/pair_grids.py`` (``--datasets`` and
``--seeds`` to do less; ``--all-rows`` to train on every training row instead of the
subset; ``--quick``: usps, satimage and spirals on 2,000 rows, two seeds). Results go to
``bench/results/pair_grids.json``.
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
from knots import MAX_TRAIN_ROWS, load_any, streamlearn_commit
from machine_info import library_versions, machine_info
from out_of_the_box import DATASETS, QUICK_DATASETS, QUICK_TRAIN_ROWS

RESULTS_DIR = Path(__file__).resolve().parent / "results"
#: The settings compared: their names and ``AdditiveSVC`` parameters.
SETTINGS = {"auto": {}, "fixed_8": {"pair_bases": 8}}


def run(name: str, seeds: int, max_rows: int | None) -> dict[str, Any]:
    """Every seed's test error, fit time and pair grid for each setting on one dataset."""
    from sklearn.exceptions import ConvergenceWarning

    from streamlearn.models import AdditiveSVC

    X, y, Xt, yt = load_any(name, max_rows)
    AdditiveSVC(progress=False).fit(X, y)  # kernels compiled
    row: dict[str, Any] = {"dataset": name, "n_train": len(y), "n_test": len(yt),
                           "n_features": int(X.shape[1])}
    for setting, params in SETTINGS.items():
        errors, times, warned, grids, tried = [], [], [], [], []
        for seed in range(seeds):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", ConvergenceWarning)
                started = time.perf_counter()
                model = AdditiveSVC(random_state=seed, progress=False, **params).fit(X, y)
                times.append(time.perf_counter() - started)
            warned.append(sum(issubclass(w.category, ConvergenceWarning) for w in caught))
            errors.append(100.0 * float(np.mean(model.predict(Xt) != yt)))
            grids.append(getattr(model, "pair_bases_", None))  # None: no pairs kept
            tried.append(model.interaction_check_.get("pair_bases"))
        row[setting] = {"test_error_pct": errors, "fit_s": times,
                        "convergence_warnings": warned, "pair_bases": grids,
                        "grids_tried": tried,
                        "mean_error_pct": float(np.mean(errors)),
                        "std_error_pct": float(np.std(errors)),
                        "mean_fit_s": float(np.mean(times))}
    return row


def table(rows: list[dict[str, Any]], seeds: int) -> dict[str, Any]:
    """Mean and standard deviation of the test error over the seeds, fit times, grids."""
    body = []
    for r in rows:
        a, f = r["auto"], r["fixed_8"]
        body.append([r["dataset"], r["n_features"],
                     f"{f['mean_error_pct']:.2f} ± {f['std_error_pct']:.2f}",
                     f"{a['mean_error_pct']:.2f} ± {a['std_error_pct']:.2f}",
                     round(a["mean_error_pct"] - f["mean_error_pct"], 2),
                     round(f["mean_fit_s"], 2), round(a["mean_fit_s"], 2),
                     " ".join("-" if g is None else str(g) for g in a["pair_bases"]),
                     f"{sum(f['convergence_warnings'])}/{sum(a['convergence_warnings'])}"])
    return {"title": f"AdditiveSVC() test error %, mean ± sd over {seeds} seeds",
            "columns": ["dataset", "features", "pair_bases=8", 'pair_bases="auto"',
                        "difference", "fit s, 8", "fit s, auto",
                        "grid kept by auto, each seed (-: no pairs)",
                        "ConvergenceWarnings (8/auto)"],
            "rows": body}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help=f"{','.join(QUICK_DATASETS)} on {QUICK_TRAIN_ROWS:,} rows, 2 seeds")
    parser.add_argument("--datasets", help="comma-separated datasets (default: all)")
    parser.add_argument("--seeds", type=int, help="random_state 0 .. seeds - 1 (default 3)")
    parser.add_argument("--all-rows", action="store_true",
                        help="every training row instead of at most 20,000")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="results directory")
    args = parser.parse_args(argv)
    datasets = (args.datasets or ",".join(QUICK_DATASETS if args.quick
                                          else DATASETS)).split(",")
    seeds = args.seeds or (2 if args.quick else 3)
    max_rows = (QUICK_TRAIN_ROWS if args.quick else None if args.all_rows
                else MAX_TRAIN_ROWS)
    started = time.perf_counter()
    rows = []
    for name in datasets:
        rows.append(run(name, seeds, max_rows))
        r = rows[-1]
        print(f"{name:14s} 8: {r['fixed_8']['mean_error_pct']:6.2f}% "
              f"auto: {r['auto']['mean_error_pct']:6.2f}% grids {r['auto']['pair_bases']} "
              f"fit {r['fixed_8']['mean_fit_s']:6.2f}s / {r['auto']['mean_fit_s']:6.2f}s",
              flush=True)
    result_table = table(rows, seeds)
    better = [r["dataset"] for r in rows
              if r["auto"]["mean_error_pct"] < r["fixed_8"]["mean_error_pct"] - 0.005]
    worse = [r["dataset"] for r in rows
             if r["auto"]["mean_error_pct"] > r["fixed_8"]["mean_error_pct"] + 0.005]
    ratio = [r["auto"]["mean_fit_s"] / r["fixed_8"]["mean_fit_s"] for r in rows]
    rows_used = "every training row" if max_rows is None else f"at most {max_rows:,} rows"
    summary = (f"AdditiveSVC() (pair_bases='auto') against pair_bases=8, {seeds} seeds, "
               f"{rows_used}: lower mean test error on "
               f"{', '.join(better) or 'none'}; higher on {', '.join(worse) or 'none'}; "
               f"fit time {min(ratio):.2f}-{max(ratio):.2f}x.")
    print(f"\n{summary}")
    result = {"benchmark": "pair_grids", "quick": args.quick, "machine": machine_info(),
              "versions": library_versions(("numpy", "numba", "scikit-learn")),
              "settings": {"datasets": datasets, "seeds": seeds, "max_train_rows": max_rows,
                           "compared": SETTINGS, "streamlearn_commit": streamlearn_commit()},
              "results": rows, "title": "Pair grids chosen on held-out rows against 8 x 8",
              "summary": summary, "tables": [result_table],
              "total_runtime_s": time.perf_counter() - started}
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "pair_grids.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(f"results in {path}")


if __name__ == "__main__":
    main()
