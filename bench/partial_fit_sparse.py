"""``partial_fit`` on sparse rows: AdditiveSVC against SGDClassifier, and the in-stream
search over sparse rows against GridSearchCV.

The out-of-core loop of scikit-learn's documentation: CSR blocks of ``--call-rows`` rows
handed to ``partial_fit`` one after the other, ``--passes`` times over the training rows,
test accuracy after each pass. Contenders, each fed the same blocks in the same order:

- ``AdditiveSVC(embedding="linear")`` and ``AdditiveSVC()`` (B-splines, zero-preserving on
  sparse rows), their defaults;
- ``SGDClassifier()`` (hinge) and ``SGDClassifier(loss="log_loss")``, their defaults.

Problems: a9a (123 binary columns, ``$STREAMLEARN_DATA/a9a.npz``, as CSR) and a generated
one whose label bends with two of 200 sparse columns (``make_problem``), where a line
cannot follow it. Seconds are the ``partial_fit`` calls' wall time (one core; the first
pass includes compiling, reported apart as ``first_pass_s``). Each contender's warnings
(``ConvergenceWarning`` included) are counted by category in the JSON, not hidden.

A second part tunes ``C`` on the same CSR rows (the whole training split held in memory):
``StreamSearchCV`` (its lanes train by ``partial_fit`` side by side in the same passes, the
winner refitted by ``fit``) against scikit-learn's ``GridSearchCV(cv=3)`` over the same
grid (``SEARCH_GRID``), for ``AdditiveSVC(embedding="linear")``, ``AdditiveSVC()`` and
``MixtureSVC()``: the choice, test accuracy and wall time (best of ``--search-repeats``
runs, after a warm-up fit that compiles the kernels). Each problem is searched on
its first ``SEARCH_ROWS`` training rows.

Run ``python bench/partial_fit_sparse.py`` (a few minutes); results go to
``bench/results/partial_fit_sparse.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine_info import library_versions, machine_info

RESULTS_DIR = Path(__file__).resolve().parent / "results"
SEED = 0
#: The grid both searches tune.
SEARCH_GRID = {"C": [0.1, 1.0, 10.0]}
#: Training rows of the generated problem the searches use.
SEARCH_ROWS = 15000


def a9a() -> tuple[sp.csr_matrix, np.ndarray, sp.csr_matrix, np.ndarray]:
    """a9a's provided split as CSR rows."""
    z = np.load(Path(os.environ.get("STREAMLEARN_DATA", "../shared/data")) / "a9a.npz")
    return (sp.csr_matrix(z["X_train"].astype(np.float32)), z["y_train"],
            sp.csr_matrix(z["X_test"].astype(np.float32)), z["y_test"])


def make_problem(n_train: int = 40000, n_test: int = 10000, d: int = 200
                 ) -> tuple[sp.csr_matrix, np.ndarray, sp.csr_matrix, np.ndarray]:
    """Rows of ``d`` columns, 5 % of them stored (normal values); the label is
    ``sin(2 x0) + x1^2 > 0.3`` where both are stored, else a fair coin."""
    rng = np.random.default_rng(SEED)
    n = n_train + n_test
    X = sp.random(n, d, density=0.05, format="csr", random_state=SEED, dtype=np.float32)
    X.data = rng.normal(size=X.nnz).astype(np.float32)
    X = X.tolil()
    X[:, :2] = rng.normal(size=(n, 2)).astype(np.float32)  # the label's two columns, dense
    X = X.tocsr()
    x = X[:, :2].toarray()
    y = (np.sin(2 * x[:, 0]) + x[:, 1] ** 2 > 0.3).astype(np.int64)
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


def warning_counts(caught: list[warnings.WarningMessage]) -> dict[str, int]:
    """The warnings a contender raised, counted by category (recorded, not hidden)."""
    counts: dict[str, int] = {}
    for w in caught:
        counts[w.category.__name__] = counts.get(w.category.__name__, 0) + 1
    return counts


def contenders() -> dict[str, Any]:
    from sklearn.linear_model import SGDClassifier

    from streamlearn import AdditiveSVC

    return {
        'AdditiveSVC(embedding="linear")': lambda: AdditiveSVC(embedding="linear",
                                                               progress=False),
        "AdditiveSVC()": lambda: AdditiveSVC(progress=False),
        "SGDClassifier()": lambda: SGDClassifier(random_state=SEED),
        'SGDClassifier(loss="log_loss")': lambda: SGDClassifier(loss="log_loss",
                                                                random_state=SEED),
    }


def run(problem: str, X: sp.csr_matrix, y: np.ndarray, Xt: sp.csr_matrix, yt: np.ndarray,
        call_rows: int, passes: int) -> list[dict[str, Any]]:
    classes = np.unique(y)
    rows = []
    for name, make in contenders().items():
        model = make()
        accuracy, seconds = [], []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for _ in range(passes):
                start = time.perf_counter()
                for a in range(0, X.shape[0], call_rows):
                    model.partial_fit(X[a:a + call_rows], y[a:a + call_rows], classes=classes)
                seconds.append(time.perf_counter() - start)
                accuracy.append(float(model.score(Xt, yt)))
        rows.append({"problem": problem, "model": name, "test_accuracy": accuracy,
                     "warnings": warning_counts(caught),
                     "pass_s": seconds, "first_pass_s": seconds[0],
                     "later_pass_s": float(np.median(seconds[1:])) if passes > 1 else None})
        print(f"{problem:10s} {name:32s} accuracy by pass "
              f"{' '.join(f'{a:.4f}' for a in accuracy)}  seconds a pass "
              f"{' '.join(f'{s:.2f}' for s in seconds)}", flush=True)
    return rows


def search_models() -> dict[str, Any]:
    from streamlearn import AdditiveSVC, MixtureSVC

    return {'AdditiveSVC(embedding="linear")': lambda: AdditiveSVC(embedding="linear",
                                                                   progress=False),
            "AdditiveSVC()": lambda: AdditiveSVC(progress=False),
            "MixtureSVC()": lambda: MixtureSVC(progress=False)}


def search(problem: str, X: sp.csr_matrix, y: np.ndarray, Xt: sp.csr_matrix, yt: np.ndarray,
           repeats: int) -> list[dict[str, Any]]:
    """StreamSearchCV against GridSearchCV(cv=3) over ``SEARCH_GRID`` on CSR rows."""
    from sklearn.model_selection import GridSearchCV

    from streamlearn import StreamSearchCV

    rows = []
    for name, make in search_models().items():
        make().fit(X[:2000], y[:2000])  # compiles the kernels before anything is timed
        out: dict[str, Any] = {"problem": problem, "model": name, "grid": SEARCH_GRID,
                               "n_train": int(X.shape[0])}
        for label, searcher in (("stream", lambda m=make: StreamSearchCV(m(), SEARCH_GRID,
                                                                         random_state=SEED)),
                                ("grid", lambda m=make: GridSearchCV(m(), SEARCH_GRID, cv=3))):
            seconds = []
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                for _ in range(repeats):
                    fitted = searcher()
                    start = time.perf_counter()
                    fitted.fit(X, y)
                    seconds.append(time.perf_counter() - start)
            out[label] = {"best_params": {k: float(v) for k, v in fitted.best_params_.items()},
                          "test_accuracy": float(fitted.score(Xt, yt)),
                          "fit_s": min(seconds), "fit_s_all": seconds,
                          "warnings": warning_counts(caught),
                          "passes": float(getattr(fitted, "n_passes_", float("nan")))}
        rows.append(out)
        print(f"{problem:10s} {name:32s} stream {out['stream']['best_params']} "
              f"{out['stream']['test_accuracy']:.4f} {out['stream']['fit_s']:.2f} s | grid "
              f"{out['grid']['best_params']} {out['grid']['test_accuracy']:.4f} "
              f"{out['grid']['fit_s']:.2f} s", flush=True)
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--call-rows", type=int, default=1000)
    parser.add_argument("--passes", type=int, default=5)
    parser.add_argument("--search-repeats", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS_DIR)
    args = parser.parse_args(argv)
    data = {"a9a": a9a(), "generated": make_problem()}
    rows = []
    for name, (X, y, Xt, yt) in data.items():
        rows += run(name, X, y, Xt, yt, args.call_rows, args.passes)
    searches = []
    for name, (X, y, Xt, yt) in data.items():
        if X.shape[0] > SEARCH_ROWS:
            X, y = X[:SEARCH_ROWS], y[:SEARCH_ROWS]
        searches += search(name, X, y, Xt, yt, args.search_repeats)
    report = {"benchmark": "partial_fit_sparse", "machine": machine_info(),
              "versions": library_versions(("numpy", "numba", "scipy", "scikit-learn",
                                            "streamlearn")),
              "call_rows": args.call_rows, "passes": args.passes, "results": rows,
              "search_rows": SEARCH_ROWS, "searches": searches}
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "partial_fit_sparse.json"
    path.write_text(json.dumps(report, indent=2) + "\n")
    print(f"results in {path}")


if __name__ == "__main__":
    main()
