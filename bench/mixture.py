"""MixtureSVC (paper 002) against a linear SVM, an RBF-kernel SVM and AdaBoost of linear SVMs.

Every method runs in this process on the same rows, one after the other:

- ``MixtureSVC``: a mixture of linear SVMs with RBF gating trained by streamed EM;
- ``LinearSVC``: scikit-learn's liblinear linear SVM;
- ``SVC (RBF)``: scikit-learn's libsvm kernel SVM, on the sizes it handles in minutes;
- ``AdaBoost``: scikit-learn's AdaBoost (SAMME) of ``LinearSVC`` where cheap.

Problems (real data from ``$STREAMLEARN_DATA``, official train/test splits):

- two intertwined spirals (Sec. V, Fig. 4): 2 x 500 points on ``r = theta``,
  ``theta`` in ``[0.5 pi, 5.5 pi]``, scaled to the unit disc; training accuracy and a
  decision-boundary plot;
- MNIST odd vs even (Tables I-II): random training subsets of 1,000, 10,000 and all 60,000
  rows, pixels scaled to [0, 1]; test accuracy on the 10,000 test rows, components (support
  vectors, boosting rounds), fit time and the time to predict the 10,000 test rows;
- ijcnn1 (in place of covertype, Tables III-IV): random subsets of 1,000, 10,000 and all
  49,990 training rows (the file's rows are ordered by class, so subsets are drawn at random
  and the stream is shuffled); accuracy and the time to predict the 91,701 test rows;
- a9a: all 32,561 training rows, a mostly linear control;
- memory: peak RSS of a stochastic-EM fit over a parquet stream of 1x and 20x the chunk size,
  each in a fresh process: ``VmHWM`` of ``/proc/self/status`` for the whole process and for
  the fit alone (the high-water mark is reset just before the fit, or the resident size
  before the fit is subtracted where it cannot be reset); ``ru_maxrss`` is not used on Linux
  because a forked child inherits its parent's high-water mark.

Hyper-parameters are chosen on a validation split, never on the test split: for MNIST,
ijcnn1 and a9a a seeded random subset of the training rows (``SELECTION_ROWS``) is split
80/20, each setting of a small grid is fitted on the 80% and scored on the 20%, and the
best one is then fitted on all training rows of each size and scored on the test split.
This covers ``MixtureSVC``'s ``tau`` and ``C``, the linear SVM's ``C`` (also used inside
AdaBoost) and the RBF SVM's ``C`` on MNIST. The RBF SVM on ijcnn1 keeps ``C = 32``,
``gamma = 2``, the setting published with the dataset (LIBSVM's practical guide). The grids,
validation accuracies and chosen values are written to the JSON (``selection``). The spirals
are scored on their training rows (there is no test split) with fixed settings.

Times are wall-clock seconds on this machine (its load average at the start is recorded);
prediction times are the median of 3 runs after a first run (or that first run's time
when it takes more than 2 s, for kernel SVMs); the kernels are compiled
(or loaded from numba's cache) by a small warm-up fit first. ``MixtureSVC``'s other settings
(components, EM variant, epochs, chunk rows) are fixed per problem.

Run ``python bench/mixture.py`` (full) or ``--quick`` (spirals, 1,000-row subsets, a9a on
5,000 rows and a smaller memory check). Results go to ``bench/results/mixture.json``, the
spirals figure to ``mixture.png`` and accuracy and time against training size to
``mixture_sizes.png``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from machine_info import library_versions, machine_info

BENCH_DIR = Path(__file__).resolve().parent
RESULTS_DIR = BENCH_DIR / "results"
DATA_DIR = BENCH_DIR / "data" / "mixture"
SEED = 0
PREDICT_REPEATS = 3

#: MixtureSVC settings per problem (em, k_max, tau, C, nu, epochs, chunk rows); ``tau`` and
#: ``C`` of mnist, ijcnn1 and a9a are replaced by the values chosen on the validation split.
MIXTURE = {
    "spirals": dict(em="batch", n_components=20, tau=150.0, C=1000.0, nu=0.0, epochs=100,
                    chunk_rows=250),
    "mnist": dict(em="batch", n_components=10, tau=0.5, C=0.1, nu=1.0, epochs=5,
                  chunk_rows=2000),
    "ijcnn1": dict(em="batch", n_components=20, tau=50.0, C=32.0, nu=1.0, epochs=5,
                   chunk_rows=1000),
    "a9a": dict(em="batch", n_components=10, tau=0.5, C=0.05, nu=1.0, epochs=8,
                chunk_rows=2000),
}
#: Linear SVM ``C``; mnist, ijcnn1 and a9a are replaced by the validation choice.
LINEAR_C = {"spirals": 1.0, "mnist": 0.1, "ijcnn1": 1.0, "a9a": 0.05}
#: RBF SVM; mnist's ``C`` is chosen on the validation split; ijcnn1's C = 32, gamma = 2 is the
#: setting published with the dataset (LIBSVM practical guide), not tuned here.
RBF = {"spirals": dict(C=10.0, gamma=50.0), "mnist": dict(C=10.0, gamma="scale"),
       "ijcnn1": dict(C=32.0, gamma=2.0)}
#: Training rows drawn (seeded) for hyper-parameter selection, 20% of them held out.
SELECTION_ROWS = 10_000
SELECTION_ROWS_QUICK = 2_000
VALIDATION_FRACTION = 0.2
#: Grids tried on the validation split, per problem. In the full run every choice is inside
#: its grid except a9a's linear C, whose validation accuracy is flat across the grid; a9a's
#: mixture keeps one tau (it ends with a single active component, a linear model).
MIXTURE_GRID = {
    "mnist": {"tau": [0.25, 0.5, 1.0, 2.0], "C": [0.01, 0.03, 0.1, 0.3]},
    "ijcnn1": {"tau": [12.5, 25.0, 50.0, 100.0], "C": [8.0, 32.0, 128.0]},
    "a9a": {"tau": [0.5], "C": [0.01, 0.05, 0.25]},
}
LINEAR_C_GRID = [0.001, 0.01, 0.1, 1.0, 10.0]
RBF_C_GRID = {"mnist": [1.0, 10.0, 100.0]}
#: Largest training size each peer is run on.
RBF_MAX_ROWS = {"spirals": 1000, "mnist": 10_000, "ijcnn1": 49_990}
ADABOOST_MAX_ROWS = {"spirals": 1000, "mnist": 10_000, "ijcnn1": 10_000}
ADABOOST_ROUNDS = 50
MEMORY_CHUNK_ROWS = 20_000
MEMORY_FEATURES = 8


# -- data ---------------------------------------------------------------------------------
def spirals(n_per_class: int = 500, seed: int = SEED) -> tuple[np.ndarray, np.ndarray]:
    """Two intertwined Archimedean spirals, points uniform along the curve, shuffled."""
    rng = np.random.default_rng(seed)
    lo, hi = 0.5 * np.pi, 5.5 * np.pi
    theta = np.sqrt(rng.uniform(lo**2, hi**2, size=n_per_class))  # uniform in arc length
    arm = np.c_[theta * np.cos(theta), theta * np.sin(theta)] / hi
    X = np.vstack([arm, -arm]).astype(np.float32)
    y = np.r_[np.ones(n_per_class), np.zeros(n_per_class)].astype(np.int64)
    order = rng.permutation(len(y))
    return np.ascontiguousarray(X[order]), y[order]


def data_dir() -> Path:
    root = os.environ.get("STREAMLEARN_DATA")
    if not root or not Path(root).is_dir():
        sys.exit("set STREAMLEARN_DATA to the directory holding mnist.npz, ijcnn1.npz, a9a.npz")
    return Path(root)


def load(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Train and test arrays of a real dataset (MNIST: pixels / 255, odd vs even)."""
    with np.load(data_dir() / f"{name}.npz") as f:
        X, y, Xt, yt = (f[k] for k in ("X_train", "y_train", "X_test", "y_test"))
    if name == "mnist":
        X = X.reshape(len(X), -1) / 255.0
        Xt = Xt.reshape(len(Xt), -1) / 255.0
        y, yt = y % 2, yt % 2
    if hasattr(X, "toarray"):
        X, Xt = X.toarray(), Xt.toarray()
    return (np.ascontiguousarray(X, dtype=np.float32), np.asarray(y).astype(np.int64),
            np.ascontiguousarray(Xt, dtype=np.float32), np.asarray(yt).astype(np.int64))


# -- methods ------------------------------------------------------------------------------
def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


#: A first prediction slower than this is the measure itself (no repeats).
SLOW_PREDICT_S = 2.0


def predict_timed(model: Any, X: np.ndarray) -> tuple[np.ndarray, float]:
    """Predictions and their wall time: the median of a few runs after the first one, or
    the first run's time when it is slower than ``SLOW_PREDICT_S`` (kernel SVMs)."""
    predicted, first = timed(lambda: model.predict(X))
    if first > SLOW_PREDICT_S:
        return predicted, first
    return predicted, statistics.median(timed(lambda: model.predict(X))[1]
                                        for _ in range(PREDICT_REPEATS))


def make_model(method: str, problem: str, **override: Any) -> Any:
    from sklearn.ensemble import AdaBoostClassifier
    from sklearn.svm import SVC, LinearSVC

    from streamlearn.models.mixture import MixtureSVC

    if method == "MixtureSVC":
        return MixtureSVC(random_state=SEED, progress=False, **{**MIXTURE[problem], **override})
    if method == "LinearSVC":
        return LinearSVC(**{"C": LINEAR_C[problem], **override}, max_iter=5000)
    if method == "SVC (RBF)":
        return SVC(kernel="rbf", **{**RBF[problem], **override})
    if method == "AdaBoost":
        return AdaBoostClassifier(LinearSVC(C=LINEAR_C[problem], max_iter=2000),
                                  n_estimators=ADABOOST_ROUNDS, random_state=SEED)
    raise ValueError(method)


def complexity(method: str, model: Any) -> int:
    """Linear models used (mixture, boosting), support vectors (RBF SVM) or 1."""
    if method == "MixtureSVC":
        return int(model.n_active_components_)
    if method == "SVC (RBF)":
        return int(model.n_support_.sum())
    if method == "AdaBoost":
        return len(model.estimators_)
    return 1


def run_method(method: str, problem: str, X: np.ndarray, y: np.ndarray, Xt: np.ndarray,
               yt: np.ndarray, n_train: int) -> dict[str, Any]:
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    model = make_model(method, problem)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        _, fit_s = timed(lambda: model.fit(X, y))
    predicted, predict_s = predict_timed(model, Xt)
    accuracy = float(np.mean(predicted == yt))
    row = {"problem": problem, "method": method, "n_train": int(n_train),
           "accuracy": accuracy, "components": complexity(method, model),
           "fit_s": fit_s, "n_predict": len(Xt), "predict_s": predict_s}
    if method == "MixtureSVC":
        row["history"] = model.history_[0]
    print(f"{problem:8s} n={n_train:>6,d} {method:11s} acc={accuracy:.4f} "
          f"comp={row['components']:>5d} fit={fit_s:7.2f}s predict={predict_s * 1e3:8.1f}ms",
          flush=True)
    return {"row": row, "model": model}


def warm_up() -> None:
    """Compile (or load from numba's cache) every kernel a fit and a prediction use."""
    from streamlearn.models.mixture import MixtureSVC

    X, y = spirals(100)
    for em in ("batch", "stochastic"):
        MixtureSVC(n_components=4, epochs=1, em=em, chunk_rows=50, progress=False).fit(
            X, y).predict(X)


# -- selection on a validation split -------------------------------------------------------
def validation_accuracy(method: str, problem: str, split: tuple[np.ndarray, ...],
                        **override: Any) -> float:
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    Xf, yf, Xv, yv = split
    model = make_model(method, problem, **override)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(Xf, yf)
    return float(np.mean(model.predict(Xv) == yv))


def select(problem: str, quick: bool) -> dict[str, Any]:
    """Choose hyper-parameters on a held-out 20% of a seeded subset of the training rows and
    store them in ``MIXTURE``, ``LINEAR_C`` and ``RBF`` (the test split is not used)."""
    X, y, _, _ = load(problem)
    n_all = len(y)
    n = min(SELECTION_ROWS_QUICK if quick else SELECTION_ROWS, n_all)
    pick = np.random.default_rng(SEED + 1).permutation(n_all)[:n]
    n_val = round(VALIDATION_FRACTION * n)
    val, fit = np.sort(pick[:n_val]), pick[n_val:]
    split = (np.ascontiguousarray(X[fit]), y[fit], np.ascontiguousarray(X[val]), y[val])
    out: dict[str, Any] = {"rows": n, "validation_rows": n_val, "seed": SEED + 1}
    t0 = time.perf_counter()

    def grid_search(method: str, grid: dict[str, list[Any]]) -> dict[str, Any]:
        import itertools

        keys = list(grid)
        tried = []
        for values in itertools.product(*(grid[k] for k in keys)):
            setting = dict(zip(keys, values, strict=True))
            acc = validation_accuracy(method, problem, split, **setting)
            tried.append({**setting, "validation_accuracy": acc})
            print(f"select   {problem:7s} {method:11s} {setting} val acc={acc:.4f}",
                  flush=True)
        best = max(tried, key=lambda t: t["validation_accuracy"])  # first of ties
        chosen = {k: best[k] for k in keys}
        return {"grid": grid, "tried": tried, "chosen": chosen}

    out["MixtureSVC"] = grid_search("MixtureSVC", MIXTURE_GRID[problem])
    MIXTURE[problem].update(out["MixtureSVC"]["chosen"])
    out["LinearSVC"] = grid_search("LinearSVC", {"C": LINEAR_C_GRID})
    LINEAR_C[problem] = out["LinearSVC"]["chosen"]["C"]
    if problem in RBF_C_GRID:
        out["SVC (RBF)"] = grid_search("SVC (RBF)", {"C": RBF_C_GRID[problem]})
        RBF[problem].update(out["SVC (RBF)"]["chosen"])
    out["select_s"] = time.perf_counter() - t0
    return out


# -- problems -----------------------------------------------------------------------------
def run_spirals() -> tuple[list[dict[str, Any]], dict[str, Any]]:
    X, y = spirals()
    rows, models = [], {}
    for method in ("MixtureSVC", "LinearSVC", "SVC (RBF)", "AdaBoost"):
        out = run_method(method, "spirals", X, y, X, y, len(y))
        rows.append(out["row"])
        models[method] = out["model"]
    return rows, models


def run_sizes(problem: str, sizes: list[int | None]) -> list[dict[str, Any]]:
    X, y, Xt, yt = load(problem)
    rng = np.random.default_rng(SEED)
    order = rng.permutation(len(y))
    rows = []
    for size in sizes:
        n = len(y) if size is None else min(size, len(y))
        pick = np.sort(order[:n]) if n < len(y) else order  # all rows: shuffled stream
        Xs, ys = np.ascontiguousarray(X[pick]), y[pick]
        for method in ("MixtureSVC", "LinearSVC", "SVC (RBF)", "AdaBoost"):
            if method == "SVC (RBF)" and n > RBF_MAX_ROWS[problem]:
                continue
            if method == "AdaBoost" and n > ADABOOST_MAX_ROWS[problem]:
                continue
            rows.append(run_method(method, problem, Xs, ys, Xt, yt, n)["row"])
    return rows


def run_a9a(limit: int | None) -> list[dict[str, Any]]:
    X, y, Xt, yt = load("a9a")
    order = np.random.default_rng(SEED).permutation(len(y))[:limit]
    Xs, ys = np.ascontiguousarray(X[order]), y[order]
    return [run_method(m, "a9a", Xs, ys, Xt, yt, len(ys))["row"]
            for m in ("MixtureSVC", "LinearSVC")]


# -- memory -------------------------------------------------------------------------------
def proc_status_bytes(field: str) -> int | None:
    """``VmHWM``/``VmRSS`` of this process from ``/proc/self/status`` (None elsewhere)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def reset_peak_rss() -> bool:
    """Reset this process's ``VmHWM`` to its current RSS (Linux >= 4.0); False if not."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def memory_child(path: str, chunk_rows: int) -> None:
    """Fit by stochastic EM over a parquet stream and print the peak RSS (child process)."""
    from streamlearn.data import open_dataset
    from streamlearn.models.mixture import MixtureSVC

    ds = open_dataset(path, target="label", chunk_rows=chunk_rows, task="classification")
    clf = MixtureSVC(n_components=8, em="stochastic", epochs=2, C=1.0, progress=False,
                     random_state=SEED)
    peak_before = proc_status_bytes("VmHWM")
    rss_before = proc_status_bytes("VmRSS")
    reset = reset_peak_rss()
    t0 = time.perf_counter()
    clf.fit(ds)
    seconds = time.perf_counter() - t0
    fit_peak = proc_status_bytes("VmHWM")
    if fit_peak is None:  # no /proc: ru_maxrss (kilobytes on Linux, bytes on macOS)
        scale = 1 if sys.platform == "darwin" else 1024
        peak = fit_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale
        source = "ru_maxrss"
    else:
        peak = max(fit_peak, peak_before or 0)
        source = "VmHWM"
        if not reset:  # the mark may predate the fit: the fit's own share is the rise
            fit_peak = peak
    print(json.dumps({"rows": ds.n_rows, "peak_rss_bytes": peak,
                      "fit_peak_rss_bytes": fit_peak, "rss_before_fit_bytes": rss_before,
                      "fit_growth_bytes": (fit_peak - rss_before) if rss_before else None,
                      "peak_reset_before_fit": reset, "source": source, "fit_s": seconds,
                      "components": int(clf.n_active_components_)}))


def run_memory(multiples: tuple[int, ...]) -> list[dict[str, Any]]:
    from streamlearn.data.synthetic import write_additive_parquet

    out = []
    for m in multiples:
        n = m * MEMORY_CHUNK_ROWS
        path = DATA_DIR / f"stream_{n}"
        if not path.exists():
            write_additive_parquet(path, n, n_features=MEMORY_FEATURES, n_files=1,
                                   row_group_rows=MEMORY_CHUNK_ROWS)
        proc = subprocess.run([sys.executable, __file__, "--memory-child", str(path),
                               str(MEMORY_CHUNK_ROWS)], capture_output=True, text=True,
                              check=True, env={**os.environ, "STREAMLEARN_PROGRESS": "0"})
        result = json.loads(proc.stdout.strip().splitlines()[-1])
        result["multiple"] = m
        print(f"memory   {m:>3d}x chunk ({n:,d} rows): peak RSS "
              f"{result['peak_rss_bytes'] / 2**20:.0f} MiB (fit alone "
              f"{result['fit_peak_rss_bytes'] / 2**20:.0f} MiB, "
              f"{(result['fit_growth_bytes'] or 0) / 2**20:+.0f} MiB over the resident size "
              f"before it), fit {result['fit_s']:.1f}s",
              flush=True)
        out.append(result)
    return out


# -- report -------------------------------------------------------------------------------
def _find(rows: list[dict[str, Any]], problem: str, method: str,
          n: int | None = None) -> dict[str, Any] | None:
    hits = [r for r in rows if r["problem"] == problem and r["method"] == method
            and (n is None or r["n_train"] == n)]
    return max(hits, key=lambda r: r["n_train"]) if hits else None


def targets(rows: list[dict[str, Any]], memory: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each target of the task with the measured figure (only those this run measured)."""
    out = []

    def add(name: str, measured: str, met: bool) -> None:
        out.append({"target": name, "measured": measured, "met": bool(met)})

    sp = _find(rows, "spirals", "MixtureSVC")
    if sp:
        add("spirals: >= 99.5% training accuracy with <= 20 components",
            f"{sp['accuracy']:.2%}, {sp['components']} components",
            sp["accuracy"] >= 0.995 and sp["components"] <= 20)
    mn = _find(rows, "mnist", "MixtureSVC", 60_000)
    if mn:
        add("MNIST odd/even, 60k: >= 95.2% with <= 10 components",
            f"{mn['accuracy']:.2%}, {mn['components']} components",
            mn["accuracy"] >= 0.952 and mn["components"] <= 10)
        add("MNIST odd/even, 60k: fit <= 5 minutes", f"{mn['fit_s']:.0f} s",
            mn["fit_s"] <= 300)
        add("MNIST: predict 10,000 rows <= 50 ms", f"{mn['predict_s'] * 1e3:.0f} ms",
            mn["predict_s"] <= 0.05)
    ij = _find(rows, "ijcnn1", "MixtureSVC", 49_990)
    rbf = _find(rows, "ijcnn1", "SVC (RBF)", 49_990)
    if ij:
        add("ijcnn1, all rows: >= 96.5% with <= 20 components",
            f"{ij['accuracy']:.2%}, {ij['components']} components",
            ij["accuracy"] >= 0.965 and ij["components"] <= 20)
    if ij and rbf:
        speedup = rbf["predict_s"] / ij["predict_s"]
        add("ijcnn1: predict the 91,701 test rows >= 20x faster than the RBF SVM",
            f"{speedup:.0f}x ({ij['predict_s']:.2f} s vs {rbf['predict_s']:.1f} s)",
            speedup >= 20)
    a9, lin = _find(rows, "a9a", "MixtureSVC"), _find(rows, "a9a", "LinearSVC")
    if a9 and lin:
        add("a9a: accuracy no lower than the linear SVM's",
            f"{a9['accuracy']:.2%} vs {lin['accuracy']:.2%}", a9["accuracy"] >= lin["accuracy"])
    if len(memory) >= 2:
        lo, hi = memory[0], memory[-1]
        ratio = hi["peak_rss_bytes"] / lo["peak_rss_bytes"]
        add(f"memory: peak RSS at {hi['multiple']}x the chunk within 10% of 1x",
            f"{lo['peak_rss_bytes'] / 2**20:.0f} MiB -> {hi['peak_rss_bytes'] / 2**20:.0f} MiB "
            f"({ratio - 1:+.1%})", abs(ratio - 1) <= 0.10)
    return out


def report_tables(report: dict[str, Any]) -> dict[str, Any]:
    """Title, summary and tables of a result for ``bench/REPORT.md`` (see bench/README.md)."""
    rows = report["results"]
    table_rows = [[r["problem"], r["n_train"], r["method"], round(100 * r["accuracy"], 2),
                   r["components"], round(r["fit_s"], 2), round(r["predict_s"] * 1e3, 1),
                   r["n_predict"]] for r in rows]
    memory_rows = [[m["multiple"], m["rows"], round(m["peak_rss_bytes"] / 2**20),
                    round(m["fit_peak_rss_bytes"] / 2**20), round(m["fit_s"], 1)]
                   for m in report.get("memory", [])]
    selection_rows = [[problem, method, json.dumps(sel[method]["chosen"]),
                       round(100 * max(t["validation_accuracy"] for t in sel[method]["tried"]),
                             2), len(sel[method]["tried"])]
                      for problem, sel in report.get("selection", {}).items()
                      for method in ("MixtureSVC", "LinearSVC", "SVC (RBF)") if method in sel]
    target_rows = [[t["target"], t["measured"], "yes" if t["met"] else "no"]
                   for t in report.get("targets", [])]
    met = sum(t["met"] for t in report.get("targets", []))
    return {
        "title": "MixtureSVC: mixture of linear SVMs vs linear, RBF and boosted SVMs",
        "summary": (f"Accuracy, size (linear models or support vectors), fit and prediction "
                    f"time of MixtureSVC and its peers on spirals, MNIST odd/even, ijcnn1 and "
                    f"a9a, all in one run; {met} of {len(target_rows)} targets met."),
        "tables": [
            {"title": "Targets", "columns": ["target", "measured", "met"], "rows": target_rows},
            {"title": "Accuracy (%) on the test rows (spirals: training rows) and times",
             "columns": ["problem", "training rows", "method", "accuracy %", "components",
                         "fit s", "predict ms", "rows predicted"],
             "rows": table_rows,
             "notes": ("components: active mixture components (MixtureSVC), support vectors "
                       "(SVC), boosting rounds (AdaBoost), 1 (LinearSVC).")},
            {"title": "Peak RSS of a stochastic-EM fit over a parquet stream",
             "columns": ["stream / chunk", "rows", "peak RSS MiB", "fit peak RSS MiB",
                         "fit s"],
             "rows": memory_rows,
             "notes": f"{MEMORY_CHUNK_ROWS:,d}-row chunks of {MEMORY_FEATURES} float32 "
                      "features, 8 components, 2 epochs, each size in a fresh process; VmHWM of "
                      "/proc/self/status, for the process and for the fit alone."},
            {"title": "Hyper-parameters chosen on a validation split of the training rows",
             "columns": ["problem", "method", "chosen", "validation accuracy %",
                         "settings tried"],
             "rows": selection_rows,
             "notes": "20% of a seeded random subset of the training rows held out; the "
                      "test split is never used for selection."},
        ],
        "plots": ["mixture.png", "mixture_sizes.png"],
    }


def plot_spirals(models: dict[str, Any], rows: list[dict[str, Any]], path: Path) -> None:
    """Decision regions of the mixture, the RBF SVM and the linear SVM; eq. 19 by epoch."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    X, y = spirals()
    grid = np.linspace(-1.1, 1.1, 300)
    gx, gy = np.meshgrid(grid, grid)
    G = np.c_[gx.ravel(), gy.ravel()].astype(np.float32)
    acc = {r["method"]: r for r in rows if r["problem"] == "spirals"}
    fig, axes = plt.subplots(1, 4, figsize=(20, 5))
    for ax, method in zip(axes[:3], ("MixtureSVC", "SVC (RBF)", "LinearSVC"), strict=True):
        model = models[method]
        z = model.decision_function(G).reshape(gx.shape)
        ax.contourf(gx, gy, z > 0, levels=[-0.5, 0.5, 1.5], colors=["#dddddd", "white"])
        ax.contour(gx, gy, z, levels=[0], colors="k", linewidths=0.8)
        ax.scatter(X[y == 1, 0], X[y == 1, 1], s=4, c="tab:red")
        ax.scatter(X[y == 0, 0], X[y == 0, 1], s=4, c="tab:green")
        if method == "MixtureSVC":
            keep = model.xi_[0] > 0
            V = model.centers_[0][keep]
            ax.scatter(V[:, 0], V[:, 1], marker="x", c="k", s=40)
            for j, (vx, vy) in enumerate(V):
                ax.annotate(str(j), (vx, vy), fontsize=8)
        r = acc[method]
        ax.set_title(f"{method}: {r['accuracy']:.1%}, {r['components']} "
                     f"{'support vectors' if method == 'SVC (RBF)' else 'linear models'}")
        ax.set_aspect("equal")
    history = acc["MixtureSVC"]["history"]
    axes[3].plot([h["penalised"] for h in history], label="eq. 19 (penalised)")
    axes[3].plot([h["loglik"] for h in history], label="eq. 8 data term")
    axes[3].set_xlabel("EM iteration")
    axes[3].set_title("MixtureSVC log-likelihood")
    axes[3].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def plot_sizes(rows: list[dict[str, Any]], path: Path) -> None:
    """Accuracy, fit time and prediction time against training rows, per method."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    problems = [p for p in ("mnist", "ijcnn1") if any(r["problem"] == p for r in rows)]
    if not problems:
        return
    fig, axes = plt.subplots(len(problems), 3, figsize=(16, 4.5 * len(problems)),
                             squeeze=False)
    for i, problem in enumerate(problems):
        for method in ("MixtureSVC", "LinearSVC", "SVC (RBF)", "AdaBoost"):
            pts = sorted((r["n_train"], r) for r in rows
                         if r["problem"] == problem and r["method"] == method)
            if not pts:
                continue
            n = [p[0] for p in pts]
            axes[i, 0].plot(n, [100 * p[1]["accuracy"] for p in pts], "o-", label=method)
            axes[i, 1].plot(n, [p[1]["fit_s"] for p in pts], "o-", label=method)
            axes[i, 2].plot(n, [p[1]["predict_s"] for p in pts], "o-", label=method)
        n_pred = next(r["n_predict"] for r in rows if r["problem"] == problem)
        for ax, label in zip(axes[i], ("test accuracy %", "fit s",
                                       f"predict {n_pred:,d} rows, s"), strict=True):
            ax.set_xscale("log")
            ax.set_xlabel("training rows")
            ax.set_ylabel(label)
            ax.set_title(problem)
            if label != "test accuracy %":
                ax.set_yscale("log")
        axes[i, 0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (a few minutes)")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="results directory")
    parser.add_argument("--memory-child", nargs=2, metavar=("PATH", "CHUNK_ROWS"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.memory_child:
        memory_child(args.memory_child[0], int(args.memory_child[1]))
        return
    os.environ.setdefault("STREAMLEARN_PROGRESS", "0")
    data_dir()
    info = machine_info()
    start = time.perf_counter()
    warm_up()
    selection = {p: select(p, args.quick) for p in ("mnist", "ijcnn1", "a9a")}
    rows, models = run_spirals()
    sizes: list[int | None] = [1000] if args.quick else [1000, 10_000, None]
    rows += run_sizes("mnist", sizes)
    rows += run_sizes("ijcnn1", sizes)
    rows += run_a9a(5000 if args.quick else None)
    memory = run_memory((1, 4) if args.quick else (1, 20))
    report = {
        "benchmark": "mixture",
        "quick": bool(args.quick),
        "machine": info,
        "versions": library_versions(),
        "settings": {"mixture": MIXTURE, "linear_C": LINEAR_C, "rbf": RBF,
                     "rbf_max_rows": RBF_MAX_ROWS, "adaboost_max_rows": ADABOOST_MAX_ROWS,
                     "adaboost_rounds": ADABOOST_ROUNDS, "predict_repeats": PREDICT_REPEATS,
                     "memory_chunk_rows": MEMORY_CHUNK_ROWS, "seed": SEED},
        "selection": selection,
        "results": rows,
        "memory": memory,
        "targets": targets(rows, memory),
        "total_s": time.perf_counter() - start,
    }
    report.update(report_tables(report))
    args.out.mkdir(parents=True, exist_ok=True)
    plot_spirals(models, rows, args.out / "mixture.png")
    plot_sizes(rows, args.out / "mixture_sizes.png")
    (args.out / "mixture.json").write_text(json.dumps(report, indent=2) + "\n")
    for t in report["targets"]:
        print(f"[{'met' if t['met'] else 'NOT met'}] {t['target']}: {t['measured']}")
    print(f"total {report['total_s']:.0f} s; results in {args.out / 'mixture.json'}")


if __name__ == "__main__":
    main()
