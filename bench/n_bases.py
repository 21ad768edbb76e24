"""B-spline bases per feature: fixed counts against ``n_bases="auto"``, over seeds and sizes.

``AdditiveSVC(n_bases="auto")`` (the default) trains its model with 8 bases per feature,
then with 16 and 32, each kept while it lowers the held-out log-loss of the classifier's
probabilities. This benchmark fits it beside fixed counts (8, 10, 14, 20, 32; 20 was the
default before) on every classification dataset of ``bench/out_of_the_box.py`` (the same
loading, a seeded subset of at most 20,000 training rows, the provided test split), with
``random_state`` 0 to ``--seeds - 1``, each seed also drawing its subset. A second part
grows the rows: ijcnn1 and MNIST odd/even on all their training rows, and the generated
problem of ``streamlearn demo`` (smooth curves over standard normal features, 200,000 test
rows) at 20,000, 200,000 and 2,000,000 rows, the largest with the demo's cubic splines.
Each setting is fitted as a user would, every other parameter left at its default; the
fit time includes every count the search trains (after a warm-up fit, so that the kernels
are compiled).

Run ``STREAMLEARN_DATA=../shared/data python bench/n_bases.py`` (about 25 minutes on 2
cores with ``--jobs 2``, which runs two fits at a time: their times are then measured on a
shared machine). ``--datasets``, ``--seeds``, ``--no-growth`` do less; ``--quick``: usps
and satimage, one seed, 8 and 20 bases and auto, no second part. Results go to
``bench/results/n_bases.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from knots import streamlearn_commit
from machine_info import library_versions, machine_info
from out_of_the_box import DATASETS, encode_labels, load, subsample

RESULTS_DIR = Path(__file__).resolve().parent / "results"
MAX_TRAIN_ROWS = 20_000
COUNTS: tuple[int | str, ...] = (8, 10, 14, 20, 32, "auto")
QUICK_DATASETS = ("usps", "satimage")
QUICK_COUNTS: tuple[int | str, ...] = (8, 20, "auto")
#: The second part: (dataset, training rows, extra parameters, counts).
GROWTH: tuple[tuple[str, int, dict[str, Any], tuple[int | str, ...]], ...] = (
    ("ijcnn1", 49_990, {}, COUNTS),
    ("mnist_oddeven", 60_000, {}, (8, 20, "auto")),
    ("demo", 20_000, {}, COUNTS),
    ("demo", 200_000, {}, COUNTS),
    ("demo", 2_000_000, {"degree": 3}, (20, "auto")),
)
DEMO_TEST_ROWS = 200_000


def rows_of(name: str, n_rows: int | None, seed: int) -> tuple[np.ndarray, ...]:
    """Training rows (a seeded subset of at most ``n_rows``) and the test split."""
    if name == "demo":
        from streamlearn.data.synthetic import additive_problem

        assert n_rows is not None
        X, y = additive_problem(n_rows, seed=seed)
        Xt, yt = additive_problem(DEMO_TEST_ROWS, seed=1000 + seed)
        return X, y.astype(np.int64), Xt, yt.astype(np.int64)
    X, y, Xt, yt = load(name)
    X, y = subsample(X, y, n_rows, seed, shuffle=True)
    y, yt, _ = encode_labels(y, yt)
    return X, y, Xt, yt


def fit_one(task: tuple[str, int | None, int, int | str, dict[str, Any]]) -> dict[str, Any]:
    """One fit: its test error, time, the count kept and the counts tried."""
    from sklearn.exceptions import ConvergenceWarning

    from streamlearn.models import AdditiveSVC

    name, n_rows, seed, count, extra = task
    X, y, Xt, yt = rows_of(name, n_rows, seed)
    AdditiveSVC(n_bases=count, progress=False, **extra).fit(X, y)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        started = time.perf_counter()
        model = AdditiveSVC(n_bases=count, random_state=seed, progress=False,
                            **extra).fit(X, y)
        fit_s = time.perf_counter() - started
    return {"dataset": name, "n_train": len(y), "n_test": len(yt), "seed": seed,
            "n_bases": count, "params": extra,
            "test_error_pct": 100.0 * float(np.mean(model.predict(Xt) != yt)),
            "fit_s": fit_s, "n_bases_kept": int(model.n_bases_),
            "bases_tried": getattr(model, "bases_tried_", None),
            "pairs_kept": len(model.interactions_),
            "convergence_warnings": sum(issubclass(w.category, ConvergenceWarning)
                                        for w in caught)}


def summarise(fits: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mean test error and fit time of each (dataset, rows, count) over its seeds."""
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for f in fits:
        groups.setdefault((f["dataset"], f["n_train"], json.dumps(f["params"]),
                           str(f["n_bases"])), []).append(f)
    out = []
    for (name, n_train, params, count), group in groups.items():
        errors = [g["test_error_pct"] for g in group]
        out.append({"dataset": name, "n_train": n_train, "params": json.loads(params),
                    "n_bases": count, "seeds": len(group),
                    "mean_error_pct": float(np.mean(errors)),
                    "std_error_pct": float(np.std(errors)),
                    "mean_fit_s": float(np.mean([g["fit_s"] for g in group])),
                    "kept": [g["n_bases_kept"] for g in group]})
    return out


def table(summary: list[dict[str, Any]], counts: tuple[int | str, ...]) -> dict[str, Any]:
    """One row per (dataset, rows): the mean test error of each count, and what auto kept."""
    keyed: dict[tuple[Any, ...], dict[str, dict[str, Any]]] = {}
    for s in summary:
        keyed.setdefault((s["dataset"], s["n_train"], json.dumps(s["params"])),
                         {})[s["n_bases"]] = s
    body = []
    for (name, n_train, params), by_count in keyed.items():
        cells = [f"{by_count[str(c)]['mean_error_pct']:.2f}" if str(c) in by_count else ""
                 for c in counts]
        fixed = {c: v["mean_error_pct"] for c, v in by_count.items() if c != "auto"}
        auto = by_count.get("auto")
        best = min(fixed, key=fixed.get) if fixed else None
        label = name + ("" if params == "{}" else f" {json.loads(params)}")
        body.append([label, n_train, by_count[next(iter(by_count))]["seeds"], *cells,
                     best, " ".join(map(str, auto["kept"])) if auto else "",
                     f"{by_count['20']['mean_fit_s']:.2f}" if "20" in by_count else "",
                     f"{auto['mean_fit_s']:.2f}" if auto else ""])
    return {"title": "AdditiveSVC() test error %, mean over the seeds, by bases per feature",
            "columns": ["dataset", "train rows", "seeds", *map(str, counts),
                        "best fixed", "auto kept (per seed)", "fit s, 20", "fit s, auto"],
            "rows": body}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help=f"{','.join(QUICK_DATASETS)}, one seed, counts {QUICK_COUNTS}")
    parser.add_argument("--datasets", help="comma-separated datasets of the first part "
                        "(default: all of bench/out_of_the_box.py's but spirals)")
    parser.add_argument("--seeds", type=int, default=3, help="random_state 0 .. seeds - 1")
    parser.add_argument("--no-growth", action="store_true", help="skip the second part")
    parser.add_argument("--jobs", type=int, default=1, help="fits run at a time")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="results directory")
    args = parser.parse_args(argv)
    datasets = (args.datasets.split(",") if args.datasets
                else list(QUICK_DATASETS) if args.quick
                else [d for d in DATASETS if d != "spirals"])
    counts = QUICK_COUNTS if args.quick else COUNTS
    seeds = 1 if args.quick else args.seeds
    tasks = [(name, MAX_TRAIN_ROWS, seed, count, {}) for name in datasets
             for seed in range(seeds) for count in counts]
    if not (args.no_growth or args.quick):
        tasks += [(name, rows, 0, count, extra) for name, rows, extra, counts in GROWTH
                  for count in counts]
    started = time.perf_counter()
    fits = []
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for fit in pool.map(fit_one, tasks):
            fits.append(fit)
            print(f"{fit['dataset']:14s} {fit['n_train']:>9,} seed {fit['seed']} "
                  f"n_bases={fit['n_bases']!s:5s} {fit['test_error_pct']:6.2f}% "
                  f"{fit['fit_s']:7.2f} s kept {fit['n_bases_kept']}", flush=True)
    summary = summarise(fits)
    result_table = table(summary, counts)
    by_key = {(s["dataset"], s["n_train"], json.dumps(s["params"]), s["n_bases"]): s
              for s in summary}
    lower = [f"{k[0]} ({k[1]:,})" for k in by_key if k[3] == "auto"
             and by_key[k]["mean_error_pct"] < by_key[(*k[:3], "20")]["mean_error_pct"] - 0.005]
    higher = [f"{k[0]} ({k[1]:,})" for k in by_key if k[3] == "auto"
              and by_key[k]["mean_error_pct"] > by_key[(*k[:3], "20")]["mean_error_pct"] + 0.005]
    summary_text = (f"AdditiveSVC(n_bases='auto') against n_bases=20: lower mean test error "
                    f"on {', '.join(lower) or 'none'}; higher on {', '.join(higher) or 'none'}.")
    print(f"\n{summary_text}")
    result = {"benchmark": "n_bases", "quick": args.quick, "machine": machine_info(),
              "versions": library_versions(("numpy", "numba", "scikit-learn")),
              "settings": {"datasets": datasets, "seeds": seeds, "counts": list(counts),
                           "max_train_rows": MAX_TRAIN_ROWS, "jobs": args.jobs,
                           "growth": [] if args.no_growth or args.quick else
                           [[n, r, e, list(c)] for n, r, e, c in GROWTH],
                           "streamlearn_commit": streamlearn_commit()},
              "fits": fits, "results": summary,
              "title": "Bases per feature: fixed counts against n_bases='auto'",
              "summary": summary_text, "tables": [result_table],
              "total_runtime_s": time.perf_counter() - started}
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "n_bases.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(f"results in {path}")


if __name__ == "__main__":
    main()
