"""The first fit after installing: each model's defaults from an empty kernel cache.

numba compiles a kernel on its first call and caches it on disk, so the first ``fit`` of
a model on a fresh install pays for compiling every kernel that fit uses. For each model,
a new Python process with an empty ``NUMBA_CACHE_DIR`` fits the model's defaults on a
small generated problem (2,000 rows x 10 features; three classes for the multiclass
classifiers, two for the two-class ones) and reports the time of that first fit, the part
of it spent compiling (:class:`~streamlearn.engine.compile_clock.CompileClock`), and a
second fit in the same process; a further process then fits again from the cache the first
one left. Each model gets its own empty cache, so no model is helped by another's kernels.
On two or more cores a fit hands the kernels it calls later to a second process
(:mod:`streamlearn.solvers.compile_ahead`); ``STREAMLEARN_COMPILE_AHEAD=0`` measures the
same fits without it.
Importing the model's module (and scikit-learn with it, about 1.7 s) is timed apart, as
``import_s``.

Run ``python bench/first_fit.py`` (``--quick``: the same, it is already small); results go
to ``bench/results/first_fit.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from machine_info import library_versions, machine_info

RESULTS_DIR = Path(__file__).resolve().parent / "results"

MODELS = ("AdditiveSVC", "MixtureSVC", "ShareBoostClassifier", "SparseJSBoostClassifier",
          "SuperSparseClassifier", "SparsePPRRegressor", "SuperSparseRegressor")
REGRESSORS = ("SparsePPRRegressor", "SuperSparseRegressor")
#: Two-class classifiers (the others get three classes).
BINARY = ("SparseJSBoostClassifier", "SuperSparseClassifier")

#: Run in a fresh process: fit twice, report both times and the compile time of the first.
CHILD = r"""
import json, sys, time, warnings
started = time.perf_counter()
import numpy as np
import streamlearn.models as models
from streamlearn.engine.compile_clock import CompileClock

name, target, params = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
estimator = getattr(models, name)  # imports the model's module, and scikit-learn
imported = time.perf_counter() - started
rng = np.random.default_rng(0)
X = rng.normal(size=(2000, 10)).astype(np.float32)
signal = np.sin(2 * X[:, 0]) + X[:, 1] ** 2 - X[:, 2]
if target == "regression":
    y = signal + 0.1 * rng.normal(size=2000)
else:
    y = np.digitize(signal, [-0.5, 0.8] if target == "multiclass" else [np.median(signal)])
times = []
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    for _ in range(2):
        t0 = time.perf_counter()
        with CompileClock() as compiling:
            estimator(**params).fit(X, y)
        times.append(time.perf_counter() - t0)
        if len(times) == 1:
            compile_s = compiling.seconds
# kernels compiled ahead by a second process (the default on two cores): done before the
# process exits, so that the next measurement runs alone
from streamlearn.solvers.compile_ahead import wait_for_second_processes
wait_for_second_processes()
print(json.dumps({"import_s": imported, "first_fit_s": times[0], "compile_s": compile_s,
                  "second_fit_s": times[1]}))
"""


def run_child(name: str, cache: str, params: dict[str, Any]) -> dict[str, float]:
    """Fit ``name`` (its defaults but for ``params``) twice in a fresh process whose kernel
    cache is ``cache``."""
    env = {**os.environ, "NUMBA_CACHE_DIR": cache}
    target = ("regression" if name in REGRESSORS else
              "binary" if name in BINARY else "multiclass")
    out = subprocess.run([sys.executable, "-c", CHILD, name, target, json.dumps(params)],
                         env=env,
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{name}'s fit failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="the same run (it is small)")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="results directory")
    parser.add_argument("--only", nargs="*", default=list(MODELS), help="models to run")
    parser.add_argument("--params", type=json.loads, default={},
                        help='constructor parameters of every model run, as JSON '
                             '(e.g. \'{"solver": "dcd"}\' with --only AdditiveSVC)')
    args = parser.parse_args(argv)

    rows = []
    print(f"{'model':<24} {'first fit':>9} {'compiling':>9} {'2nd fit':>8} {'cached':>8}")
    for name in args.only:
        with tempfile.TemporaryDirectory(prefix="first-fit-") as cache:
            started = time.perf_counter()
            cold = run_child(name, cache, args.params)
            cold_process_s = time.perf_counter() - started
            warm = run_child(name, cache, args.params)
        row = {"model": name, "first_fit_s": round(cold["first_fit_s"], 2),
               "compile_s": round(cold["compile_s"], 2),
               "second_fit_s": round(cold["second_fit_s"], 3),
               "cached_first_fit_s": round(warm["first_fit_s"], 3),
               "import_s": round(cold["import_s"], 2),
               "cold_process_s": round(cold_process_s, 1)}
        rows.append(row)
        print(f"{name:<24} {row['first_fit_s']:>8.1f}s {row['compile_s']:>8.1f}s "
              f"{row['second_fit_s']:>7.2f}s {row['cached_first_fit_s']:>7.2f}s", flush=True)

    report = {"benchmark": "first_fit", "machine": machine_info(),
              "versions": library_versions(),
              "setup": {"rows": 2000, "features": 10,
                        "classes": f"3 (2 for {', '.join(BINARY)})",
                        "cache": "an empty NUMBA_CACHE_DIR per model",
                        "compile_ahead": os.environ.get("STREAMLEARN_COMPILE_AHEAD", "1")
                        != "0",
                        "params": args.params},
              "results": rows}
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "first_fit.json"
    path.write_text(json.dumps(report, indent=2) + "\n")
    print(f"results in {path}")


if __name__ == "__main__":
    main()
