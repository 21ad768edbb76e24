"""ShareBoost (paper 003): error against rounds and features, feature sharing, streaming cost.

Measurements in parts, each with its peers in the same run:

- ``mnist``: piecewise-linear anchors (Sec. 3.2, App. A.2) on a 50-dimensional PCA of MNIST:
  the Frobenius weight ``l2`` chosen on a validation split carved from the training rows
  (never the test set), then a fit on all training rows with it: test error after every
  round (Fig. 4) against an RBF-kernel SVM (scikit-learn ``SVC``) on the same training rows
  and the same PCA;
- ``sharing``: on the dataset with the most classes (letter, 26), with linear features on
  the raw and pairwise-product features, the number of features needed to reach a fixed test
  error as the number of classes grows (Fig. 2): ShareBoost against one-vs-rest, each binary
  problem solved by the same greedy machinery (a two-class ShareBoost) and all of them given
  the same number of rounds; the classes join in several orders (which letters make up the
  first k changes how hard k classes are), with the median, the range and the exponent of
  the growth;
- ``sharing_stumps``: the same with decision stumps as the candidate columns, counted two
  ways: the paper's features (Sec. 3.1: every stump is a column of ``W``), distinct stumps
  over all classes, and the raw features, one counted once any selected stump cuts it;
- ``sharing_anchors``: the same with piecewise-linear anchor pieces (Sec. 3.2) on letter's 16
  raw features, a piece (a ball and its ``d + 1`` columns) counting as one feature, as the
  paper's MNIST figure counts them; each binary one-vs-rest model draws its own candidate
  balls, so its pieces are counted for every class they serve;
- ``expanded``: satimage and pendigits with all products of pairs of features (App. A.3):
  test error against the fraction of features used, linear ShareBoost against scikit-learn's
  L1-regularised multinomial ``LogisticRegression`` along its regularisation path, and
  ShareBoost's stumps against scikit-learn's ``GradientBoostingClassifier`` of stumps at the
  same number of distinct features;
- ``streaming``: one round (column-score pass, corrective step; median of rounds 2-4) on a
  zarr store of 1x to 20x the chunk size, each in a fresh process: time and peak RSS
  (``VmHWM``, which ``exec`` resets; ``ru_maxrss`` would carry the parent's peak).

Run ``python bench/shareboost.py`` (full) or ``--quick``; data from ``$STREAMLEARN_DATA``.
Results go to ``bench/results/shareboost.{json,png}``. ``--gate soft`` fits the anchors with
soft-edged gates (``ShareBoostClassifier(gate="soft", gate_width=w)``; the paper's figure and
the recorded results are hard gates), ``--mnist-validation-only`` stops the ``mnist`` part
after its validation grid (the gate widths of ``--gate-width`` times the ``l2`` values), and
``--run-name NAME`` writes the parts run to ``bench/results/shareboost_runs/NAME.json``
alone, leaving ``shareboost.json`` as it is.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from machine_info import library_versions, machine_info

BENCH_DIR = Path(__file__).resolve().parent
RESULTS_DIR = BENCH_DIR / "results"
SCRATCH_DIR = BENCH_DIR / "data" / "shareboost"
SEED = 0
#: The paper's algorithm, as the recorded runs were made: an unpenalised loss (where no
#: ``l2`` is chosen) and corrective steps that run to ``refit_iter`` (a tolerance of 1e-6 of
#: the first round's largest column score is not reached in 4-8 iterations).
PAPER: dict[str, Any] = {"l2": 0.0, "tol": 1e-6}

CONFIGS: dict[str, dict[str, Any]] = {
    "quick": {
        "mnist": {"n_train": 5000, "n_test": 2000, "n_centres": 100, "n_radii": 8,
                  "max_coverage": 0.2, "n_rounds": 30, "refit_iter": 4, "svm_C": 10.0,
                  "validation": {"n_fit": 3000, "n_val": 2000, "n_rounds": 20,
                                 "l2": [1e-4, 1e-3]}},
        "sharing": {"class_counts": [2, 6, 13, 26], "n_rounds": 25, "ovr_rounds": 8,
                    "refit_iter": 8, "targets": [0.30, 0.20], "orderings": 2},
        "sharing_stumps": {"family": "stumps", "class_counts": [2, 6, 13, 26],
                           "n_rounds": 40, "ovr_rounds": 10, "refit_iter": 8,
                           "targets": [0.30, 0.20], "orderings": 2},
        "sharing_anchors": {"family": "anchors", "class_counts": [2, 6, 13, 26],
                            "n_rounds": 15, "ovr_rounds": 4, "refit_iter": 8,
                            "targets": [0.30, 0.20], "orderings": 2},
        "expanded": {"datasets": ["satimage"], "n_rounds": 15, "stump_rounds": 15,
                     "n_bins": 16, "refit_iter": 8, "lr_Cs": 3, "lr_max_iter": 40,
                     "gb_stages": 10},
        "streaming": {"chunk_rows": 4096, "multiples": [1, 5, 20], "n_features": 64,
                      "prefetch": 2},
    },
    "full": {
        "mnist": {"n_train": 60000, "n_test": 10000, "n_centres": 500, "n_radii": 16,
                  "max_coverage": 0.2, "n_rounds": 250, "refit_iter": 4, "svm_C": 10.0,
                  "validation": {"n_fit": 20000, "n_val": 10000, "n_rounds": 60,
                                 "l2": [3e-5, 1e-4]}},
        "sharing": {"class_counts": [2, 5, 10, 15, 20, 26], "n_rounds": 60,
                    "ovr_rounds": 15, "refit_iter": 10, "targets": [0.30, 0.20],
                    "orderings": 5},
        "sharing_stumps": {"family": "stumps", "class_counts": [2, 5, 10, 15, 20, 26],
                           "n_rounds": 120, "ovr_rounds": 30, "refit_iter": 10,
                           "targets": [0.30, 0.20], "orderings": 5},
        "sharing_anchors": {"family": "anchors", "class_counts": [2, 5, 10, 15, 20, 26],
                            "n_rounds": 40, "ovr_rounds": 10, "refit_iter": 10,
                            "targets": [0.30, 0.20], "orderings": 5},
        "expanded": {"datasets": ["satimage", "pendigits"], "n_rounds": 80,
                     "stump_rounds": 60, "n_bins": 16, "refit_iter": 10, "lr_Cs": 8,
                     "gb_stages": 100},
        "streaming": {"chunk_rows": 16384, "multiples": [1, 2, 5, 10, 20], "n_features": 128,
                      "prefetch": 2},
    },
}


def log(message: str) -> None:
    """Progress on stderr."""
    print(message, file=sys.stderr, flush=True)


def data_dir() -> Path:
    """``$STREAMLEARN_DATA``, which must hold the datasets."""
    root = os.environ.get("STREAMLEARN_DATA")
    if not root:
        raise SystemExit("set STREAMLEARN_DATA to the directory of the benchmark datasets")
    return Path(root)


def max_abs_scale(X_train: np.ndarray, *others: np.ndarray) -> list[np.ndarray]:
    """Every array divided by the training set's largest absolute value per feature."""
    top = np.abs(X_train).max(axis=0)
    top[top == 0] = 1.0
    return [(X / top).astype(np.float32) for X in (X_train, *others)]


def pair_products(X: np.ndarray) -> np.ndarray:
    """All products ``x_i x_j``, ``i < j`` (the expansion of App. A.3)."""
    i, j = np.triu_indices(X.shape[1], k=1)
    return np.ascontiguousarray(X[:, i] * X[:, j], dtype=np.float32)


# -- MNIST, anchors on a 50-dimensional PCA ----------------------------------------------------
def pca(X: np.ndarray, dims: int) -> tuple[np.ndarray, np.ndarray]:
    """Mean and the top ``dims`` principal directions (columns) of ``X``."""
    mean = X.mean(axis=0)
    centred = (X - mean).astype(np.float64)
    _, vectors = np.linalg.eigh(centred.T @ centred)
    return mean, vectors[:, ::-1][:, :dims]


def project(X: np.ndarray, mean: np.ndarray, P: np.ndarray) -> np.ndarray:
    """Rows of ``X`` in the PCA coordinates, float32."""
    return ((X - mean) @ P).astype(np.float32)


def anchor_model(cfg: dict[str, Any], l2: float, n_rounds: int,
                 gate_width: float | None = None) -> Any:
    """ShareBoost with anchors, as configured (soft-edged gates of ``gate_width`` with
    ``cfg["gate"] == "soft"``)."""
    from streamlearn.models.shareboost import ShareBoostClassifier

    soft = cfg.get("gate", "hard") == "soft"
    width = {"gate": "soft", "gate_width": gate_width} if soft else {}
    return ShareBoostClassifier(n_rounds=n_rounds, features="anchors",
                                n_centres=cfg["n_centres"], n_radii=cfg["n_radii"],
                                max_coverage=cfg["max_coverage"],
                                refit_iter=cfg["refit_iter"], **{**PAPER, "l2": l2}, **width,
                                chunk_rows=8192, random_state=SEED)


def mnist_anchors(cfg: dict[str, Any]) -> dict[str, Any]:
    """``l2`` on a validation split of the training rows; then the test error per round of
    anchor ShareBoost on all training rows, and an RBF-SVM on the same rows."""
    from sklearn.svm import SVC

    raw = np.load(data_dir() / "mnist.npz")
    rng = np.random.default_rng(SEED)
    order = rng.permutation(60000)
    X_all = raw["X_train"].reshape(60000, -1).astype(np.float32) / 255.0
    y_all = raw["y_train"].astype(np.int64)

    # hyper-parameters: fit on part of the training rows, score on others held out from it
    v = cfg["validation"]
    val_rows, fit_rows = np.sort(order[: v["n_val"]]), np.sort(order[v["n_val"]:][: v["n_fit"]])
    mean, P = pca(X_all[fit_rows], 50)
    Z_fit, Z_val = project(X_all[fit_rows], mean, P), project(X_all[val_rows], mean, P)
    grid = []
    soft = cfg.get("gate", "hard") == "soft"
    widths = cfg.get("gate_width", [0.6]) if soft else [None]
    for width in widths:
        for l2 in v["l2"]:
            start = time.perf_counter()
            model = anchor_model(cfg, l2, v["n_rounds"], width).fit(
                Z_fit, y_all[fit_rows], validation=(Z_val, y_all[val_rows]))
            errors = [float(e) for e in model.path_["validation_error"]]
            grid.append({"l2": l2, "gate_width": width, "validation_error": errors,
                         "best_validation_error": min(errors),
                         "final_validation_error": errors[-1],
                         "fit_s": time.perf_counter() - start})
            log(f"mnist validation: l2={l2:g}, gate width {width}: error {errors[-1]:.4f} "
                f"after {len(errors) - 1} rounds (best {min(errors):.4f})")
    best_fit = min(grid, key=lambda g: (g["final_validation_error"], g["l2"],
                                        g["gate_width"] or 0.0))
    chosen, chosen_width = best_fit["l2"], best_fit["gate_width"]
    validation = {"n_fit": len(fit_rows), "n_val": len(val_rows), "grid": grid,
                  "chosen_l2": chosen, "chosen_gate_width": chosen_width,
                  "rule": "l2 (and gate width) with the lowest validation error after the "
                          "last validation round; validation rows are training rows "
                          "held out from that fit, never test rows"}
    if cfg.get("validation_only"):
        return {"settings": {**cfg, "pca_dims": 50, "pca_rows": len(fit_rows),
                             "threads": len(os.sched_getaffinity(0))},
                "validation": validation}

    rows = np.sort(order[: cfg["n_train"]])
    X, y = X_all[rows], y_all[rows]
    X_test = raw["X_test"].reshape(10000, -1)[: cfg["n_test"]].astype(np.float32) / 255.0
    y_test = raw["y_test"][: cfg["n_test"]].astype(np.int64)
    mean, P = pca(X, 50)
    Z, Z_test = project(X, mean, P), project(X_test, mean, P)

    log(f"mnist: ShareBoost anchors on {len(y)} rows, l2={chosen:g}, "
        f"{cfg.get('gate', 'hard')} gates (width {chosen_width})")
    times: list[float] = []
    start = time.perf_counter()
    model = anchor_model(cfg, chosen, cfg["n_rounds"], chosen_width)
    model.fit(Z, y, validation=(Z_test, y_test),
              callback=lambda t, m: (times.append(time.perf_counter() - start),
                                     log(f"  round {t}: test error "
                                         f"{m.path_['validation_error'][-1]:.4f}")
                                     if t % 25 == 0 else None))
    fit_s = time.perf_counter() - start
    test_error = [float(e) for e in model.path_["validation_error"]]

    log(f"mnist: RBF SVC on {len(y)} rows")
    start = time.perf_counter()
    svm = SVC(C=cfg["svm_C"], kernel="rbf", gamma="scale").fit(Z, y)
    svm_fit_s = time.perf_counter() - start
    svm_error = float(np.mean(svm.predict(Z_test) != y_test))
    best = int(np.argmin(test_error))
    return {
        "settings": {**cfg, "pca_dims": 50, "pca_rows": len(y), "l2": chosen,
                     "gate": cfg.get("gate", "hard"), "chosen_gate_width": chosen_width,
                     "threads": len(os.sched_getaffinity(0))},
        "validation": validation,
        "rounds": list(range(len(test_error))),
        "test_error": test_error,
        "train_error": [float(e) for e in model.path_["train_error"]],
        "seconds_at_round": times,
        "shareboost_fit_s": fit_s,
        "best_error": test_error[best],
        "best_round": best,
        "final_error": test_error[-1],
        "n_anchors": len(test_error) - 1,
        "svm_error": svm_error,
        "svm_support_vectors": int(svm.n_support_.sum()),
        "svm_fit_s": svm_fit_s,
    }


# -- feature sharing: features needed against the number of classes ---------------------------
def letter_problem(products: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                  np.ndarray]:
    """Letter with its raw (and, with ``products``, pairwise-product) features; first 16000
    rows train."""
    raw = np.load(data_dir() / "letter.npz")
    X = raw["X"].astype(np.float32) / 15.0
    if products:
        X = np.hstack([X, pair_products(X)])
    y = raw["y"].astype(np.int64)
    return X[:16000], y[:16000], X[16000:], y[16000:]


def first_reaching(errors: list[float], counts: list[int], target: float) -> int | None:
    """Smallest feature count whose test error is at most ``target`` (None if never)."""
    for error, count in zip(errors, counts, strict=True):
        if error <= target:
            return int(count)
    return None


def column_keys(model: Any, family: str, owner: int) -> set[Any]:
    """The paper's features a fitted ShareBoost model computes, as keys comparable across
    models: a linear column's feature, a stump's feature and threshold, an anchor piece's
    candidate within the model ``owner`` (binary one-vs-rest models draw their own balls,
    so pieces of two models are never the same)."""
    selected = np.asarray(model.selected_features_, dtype=np.int64)
    if family == "stumps":
        features, thresholds = model.family_.split(selected)
        return {(int(f), float(t)) for f, t in zip(features, thresholds, strict=True)}
    if family == "anchors":
        return {(owner, int(c)) for c in selected}
    return {int(c) for c in selected}


def class_order(ordering: int) -> np.ndarray:
    """Letters in the order classes are added: ordering 0 is A, B, C, ...; others are seeded
    permutations of the 26."""
    return np.arange(26) if ordering == 0 else np.random.default_rng(ordering).permutation(26)


def sharing_ordering(cfg: dict[str, Any], ordering: int) -> dict[str, Any]:
    """ShareBoost against greedy one-vs-rest on the first k classes of one class order.

    The candidate columns are ``cfg["family"]``'s (linear features by default, decision
    stumps or anchor pieces); two counts after each round: the distinct raw features the
    models read (``used_features_``: for linear columns the columns selected, for stumps the
    features their thresholds cut, for anchors every feature) and the paper's features, the
    distinct columns (stumps, pieces) over all classes (:func:`column_keys`)."""
    from streamlearn.models.shareboost import ShareBoostClassifier

    family = cfg.get("family", "linear")

    X, y, X_test, y_test = letter_problem(products=family != "anchors")
    order = class_order(ordering)
    rank = np.empty(26, dtype=np.int64)
    rank[order] = np.arange(26)
    y, y_test = rank[y], rank[y_test]
    points = []
    for k in cfg["class_counts"]:
        rows, test_rows = y < k, y_test < k
        Xk, yk, Xk_test, yk_test = X[rows], y[rows], X_test[test_rows], y_test[test_rows]
        start = time.perf_counter()
        shared = ShareBoostClassifier(n_rounds=cfg["n_rounds"], features=family,
                                      refit_iter=cfg["refit_iter"], **PAPER,
                                      chunk_rows=len(yk), random_state=SEED)
        sb_counts: list[int] = []
        sb_columns: list[int] = []

        def record_shared(t: int, m: Any, counts: list[int] = sb_counts,
                          columns: list[int] = sb_columns) -> None:
            counts.append(len(m.used_features_))
            columns.append(len(column_keys(m, family, -1)))

        shared.fit(Xk, yk, validation=(Xk_test, yk_test), callback=record_shared)
        shared_s = time.perf_counter() - start
        sb_errors = [float(e) for e in shared.path_["validation_error"]]

        # one-vs-rest: round t of every binary problem, argmax of the binary margins
        start = time.perf_counter()
        margins = np.zeros((cfg["ovr_rounds"] + 1, k, len(yk_test)))
        used: list[list[set[int]]] = []
        used_columns: list[list[set[Any]]] = []
        for c in range(k):
            per_round: list[set[int]] = []
            columns_per_round: list[set[Any]] = []

            def record(t: int, m: Any, c: int = c, per_round: list[set[int]] = per_round,
                       columns_per_round: list[set[Any]] = columns_per_round,
                       test: np.ndarray = Xk_test, margins: np.ndarray = margins) -> None:
                margins[t:, c] = m.decision_function(test)  # two classes: s_1 - s_0
                per_round.append(set(m.used_features_.tolist()))
                columns_per_round.append(column_keys(m, family, c))

            ShareBoostClassifier(n_rounds=cfg["ovr_rounds"], features=family,
                                 refit_iter=cfg["refit_iter"], **PAPER, chunk_rows=len(yk),
                                 random_state=SEED).fit(
                Xk, (yk == c).astype(np.int64), callback=record)
            while len(per_round) < cfg["ovr_rounds"] + 1:  # stopped early: keeps its model
                per_round.append(per_round[-1])
                columns_per_round.append(columns_per_round[-1])
            used.append(per_round)
            used_columns.append(columns_per_round)
        ovr_s = time.perf_counter() - start
        ovr_errors = [float(np.mean(margins[t].argmax(axis=0) != yk_test))
                      for t in range(cfg["ovr_rounds"] + 1)]
        ovr_counts = [len(set().union(*(u[t] for u in used)))
                      for t in range(cfg["ovr_rounds"] + 1)]
        ovr_columns = [len(set().union(*(u[t] for u in used_columns)))
                       for t in range(cfg["ovr_rounds"] + 1)]
        points.append({
            "n_classes": int(k),
            "shareboost": {"test_error": sb_errors, "n_features": sb_counts,
                           "n_columns": sb_columns, "fit_s": shared_s},
            "one_vs_rest": {"test_error": ovr_errors, "n_features": ovr_counts,
                            "n_columns": ovr_columns, "fit_s": ovr_s},
            "needed": {f"{target:.2f}": {
                "shareboost": first_reaching(sb_errors, sb_counts, target),
                "one_vs_rest": first_reaching(ovr_errors, ovr_counts, target),
            } for target in cfg["targets"]},
            "needed_columns": {f"{target:.2f}": {
                "shareboost": first_reaching(sb_errors, sb_columns, target),
                "one_vs_rest": first_reaching(ovr_errors, ovr_columns, target),
            } for target in cfg["targets"]},
        })
        log(f"sharing: order {ordering}, k={k} needed {points[-1]['needed']}, columns "
            f"{points[-1]['needed_columns']}")
    return {"ordering": ordering, "class_order": order.tolist(), "n_features": X.shape[1],
            "family": family, "points": points}


def growth_exponent(class_counts: list[int], needed: list[int | None]) -> float | None:
    """Least-squares slope of log(features needed) on log(classes), over the class counts
    where the target was reached (at least three); 1 is linear growth."""
    pairs = [(k, n) for k, n in zip(class_counts, needed, strict=True) if n is not None]
    if len(pairs) < 3:
        return None
    k, n = np.log(np.array(pairs, dtype=np.float64)).T
    return float(np.polyfit(k, n, 1)[0])


def median_needed(values: list[int | None]) -> float | None:
    """Median over class orders, an order that never reached the target counting as
    infinitely many features (None when that is the median)."""
    med = float(np.median([np.inf if v is None else v for v in values]))
    return None if not np.isfinite(med) else med


def feature_sharing(cfg: dict[str, Any]) -> dict[str, Any]:
    """Features to reach each target error as classes are added, ShareBoost against greedy
    one-vs-rest, over several class orders run in parallel processes (one per core); per
    target and method the median over orders, its range, and the growth exponent."""
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    n_orders = cfg["orderings"]
    workers = max(1, min(n_orders, len(os.sched_getaffinity(0))))
    with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as pool:
        orders = list(pool.map(sharing_ordering, [cfg] * n_orders, range(n_orders)))
    n_features = orders[0].pop("n_features")
    for order in orders[1:]:
        del order["n_features"]
    return {"settings": {**cfg, "dataset": "letter", "n_features": n_features},
            "orders": orders, "needed": needed_summary(orders, cfg, "needed"),
            "needed_columns": needed_summary(orders, cfg, "needed_columns")}


def needed_summary(orders: list[dict[str, Any]], cfg: dict[str, Any],
                   count: str) -> dict[str, Any]:
    """Per target and method, the features needed (``count``: ``"needed"`` for raw features,
    ``"needed_columns"`` for the paper's features) over the class orders: median, range,
    orders that reached the target, and growth exponents."""
    ks = list(cfg["class_counts"])
    summary: dict[str, Any] = {}
    for target in cfg["targets"]:
        key = f"{target:.2f}"
        summary[key] = {}
        for method in ("shareboost", "one_vs_rest"):
            per_order = [[p[count][key][method] for p in o["points"]] for o in orders]
            medians = [median_needed([need[i] for need in per_order]) for i in range(len(ks))]
            exponents = [growth_exponent(ks, need) for need in per_order]
            summary[key][method] = {
                "median": medians,
                "min": [min((need[i] for need in per_order if need[i] is not None),
                            default=None) for i in range(len(ks))],
                "max": [None if any(need[i] is None for need in per_order)
                        else max(need[i] for need in per_order) for i in range(len(ks))],
                "reached": [sum(need[i] is not None for need in per_order)
                            for i in range(len(ks))],
                "exponent_of_median": growth_exponent(ks, medians),
                "exponent_per_order": exponents,
            }
    return summary


# -- expanded problems of App. A.3 -------------------------------------------------------------
def expanded_problem(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Products of pairs of features (raw features scaled to [0, 1] first)."""
    raw = np.load(data_dir() / f"{name}.npz")
    X, X_test = max_abs_scale(raw["X_train"].astype(np.float32),
                              raw["X_test"].astype(np.float32))
    return (pair_products(X), raw["y_train"].astype(np.int64), pair_products(X_test),
            raw["y_test"].astype(np.int64))


def stump_features(trees: Any) -> list[set[int]]:
    """Distinct features split on by the first ``s`` stages, for every ``s``."""
    seen: set[int] = set()
    out = []
    for stage in trees:
        for tree in stage:
            seen.update(int(f) for f in tree.tree_.feature if f >= 0)
        out.append(set(seen))
    return out


def expanded(cfg: dict[str, Any]) -> dict[str, Any]:
    """Linear ShareBoost vs the L1 path; stump ShareBoost vs gradient-boosted stumps."""
    import warnings

    from sklearn.ensemble import GradientBoostingClassifier
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    from streamlearn.models.shareboost import ShareBoostClassifier

    out = {}
    for name in cfg["datasets"]:
        X, y, X_test, y_test = expanded_problem(name)
        d = X.shape[1]
        log(f"expanded {name}: {X.shape[0]} rows, {d} features")
        start = time.perf_counter()
        linear = ShareBoostClassifier(n_rounds=cfg["n_rounds"], refit_iter=cfg["refit_iter"],
                                      **PAPER, chunk_rows=len(y), random_state=SEED)
        linear.fit(X, y, validation=(X_test, y_test))
        linear_s = time.perf_counter() - start

        path = []
        start = time.perf_counter()
        scaler = StandardScaler().fit(X)  # saga converges on standardised columns
        X_std, X_test_std = scaler.transform(X), scaler.transform(X_test)
        for C in np.logspace(-3, 0, cfg["lr_Cs"]):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                lr = LogisticRegression(C=float(C), l1_ratio=1.0, solver="saga",
                                        max_iter=cfg.get("lr_max_iter", 200),
                                        tol=1e-3).fit(X_std, y)  # pure L1
            n_used = int(np.count_nonzero(np.any(lr.coef_ != 0, axis=0)))
            path.append({"C": float(C), "n_features": n_used,
                         "test_error": float(np.mean(lr.predict(X_test_std) != y_test))})
        lr_s = time.perf_counter() - start

        stump_counts: list[int] = []
        start = time.perf_counter()
        stumps = ShareBoostClassifier(n_rounds=cfg["stump_rounds"], features="stumps",
                                      n_bins=cfg["n_bins"], refit_iter=cfg["refit_iter"],
                                      **PAPER, chunk_rows=len(y), random_state=SEED)
        stumps.fit(X, y, validation=(X_test, y_test),
                   callback=lambda t, m, counts=stump_counts: counts.append(
                       len(m.used_features_)))
        stumps_s = time.perf_counter() - start

        start = time.perf_counter()
        gb = GradientBoostingClassifier(n_estimators=cfg["gb_stages"], max_depth=1,
                                        learning_rate=0.5, random_state=SEED).fit(X, y)
        gb_s = time.perf_counter() - start
        gb_errors = [float(np.mean(p != y_test)) for p in gb.staged_predict(X_test)]
        gb_counts = [len(s) for s in stump_features(gb.estimators_)]
        out[name] = {
            "n_features": int(d), "n_train": len(y), "n_test": len(y_test),
            "n_classes": len(np.unique(y)),
            "shareboost_linear": {"n_features": [int(n) for n in linear.path_["n_selected"]],
                                  "test_error": [float(e) for e in
                                                 linear.path_["validation_error"]],
                                  "fit_s": linear_s},
            "l1_logistic": {"path": path, "fit_s": lr_s},
            "shareboost_stumps": {"n_features": stump_counts,
                                  "n_stumps": [int(n) for n in stumps.path_["n_selected"]],
                                  "test_error": [float(e) for e in
                                                 stumps.path_["validation_error"]],
                                  "fit_s": stumps_s},
            "gradient_boosting": {"n_features": gb_counts, "test_error": gb_errors,
                                  "fit_s": gb_s},
        }
    return {"settings": cfg, "datasets": out}


# -- streaming: one round against rows ---------------------------------------------------------
def write_store(path: Path, n_rows: int, d: int, chunk_rows: int) -> None:
    """A zarr store ``X``/``y`` of a synthetic 5-class problem on 4 of ``d`` features."""
    import zarr

    if path.exists():
        shutil.rmtree(path)
    group = zarr.open_group(str(path), mode="w")
    X = group.create_array("X", shape=(n_rows, d), chunks=(chunk_rows, d), dtype="float32")
    y = group.create_array("y", shape=(n_rows,), chunks=(chunk_rows,), dtype="int64")
    X.attrs["feature_names"] = [f"f{i}" for i in range(d)]
    rng = np.random.default_rng(SEED)
    W = rng.normal(size=(5, 4)) * 3.0
    for a in range(0, n_rows, chunk_rows):
        b = min(a + chunk_rows, n_rows)
        block = rng.uniform(-1, 1, size=(b - a, d)).astype(np.float32)
        X[a:b] = block
        y[a:b] = np.argmax(block[:, :4] @ W.T + 0.5 * rng.normal(size=(b - a, 5)), axis=1)


def peak_rss_bytes() -> int:
    """Peak RSS of this process (``VmHWM``: reset by ``exec``, unlike ``ru_maxrss``)."""
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def reset_peak_rss() -> bool:
    """Reset ``VmHWM`` to the current RSS (Linux ``clear_refs``); False where not allowed."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
    except OSError:
        return False
    return True


def measure_round(path: str, chunk_rows: int, prefetch: int) -> dict[str, Any]:
    """(In a subprocess) fit four rounds on the store; median time of rounds 2-4 and the
    peak RSS of rounds 2-4 (the peak mark is reset after round 1: describe pass and first
    round excluded), besides the peak of the whole fit."""
    from streamlearn.engine import LocalEngine
    from streamlearn.models.shareboost import ShareBoostClassifier

    stamps: list[float] = []
    passes: list[int] = []
    fit_peak = [0]
    reset = [False]

    def record(t: int, m: Any) -> None:
        stamps.append(time.perf_counter())
        passes.append(m.path_["passes"][-1])
        if t == 1:
            fit_peak[0] = peak_rss_bytes()
            reset[0] = reset_peak_rss()

    model = ShareBoostClassifier(n_rounds=4, refit_iter=4, **PAPER, chunk_rows=chunk_rows)
    start = time.perf_counter()
    model.fit(path, engine=LocalEngine(prefetch=prefetch), callback=record)
    total = time.perf_counter() - start
    rss = peak_rss_bytes()
    rounds = np.diff(stamps)[1:]
    return {"round_s": float(np.median(rounds)), "round_s_all": rounds.tolist(),
            "round_passes": float(np.median(np.diff(passes)[1:])), "fit_s": total,
            "prefetch": prefetch, "peak_rss_mib": rss / 2**20,
            "peak_is_rounds_only": reset[0],
            "fit_peak_rss_mib": max(rss, fit_peak[0]) / 2**20}


def streaming(cfg: dict[str, Any]) -> dict[str, Any]:
    """A round on stores of 1x..20x the chunk size, each in a fresh process (median of 3),
    without read-ahead (what the fit holds) and with the default read-ahead."""
    chunk, d = cfg["chunk_rows"], cfg["n_features"]
    SCRATCH_DIR.mkdir(parents=True, exist_ok=True)
    points: list[dict[str, Any]] = []
    read_ahead: list[dict[str, Any]] = []
    for multiple in cfg["multiples"]:
        n_rows = multiple * chunk
        path = SCRATCH_DIR / f"stream-{multiple}.zarr"
        write_store(path, n_rows, d, chunk)
        for prefetch, series in ((0, points), (cfg["prefetch"], read_ahead)):
            out = subprocess.run([sys.executable, __file__, "--measure-round", str(path),
                                  "--chunk-rows", str(chunk), "--prefetch", str(prefetch)],
                                 check=True, capture_output=True, text=True)
            point = {"multiple": multiple, "n_rows": n_rows,
                     "data_mib": n_rows * d * 4 / 2**20, **json.loads(out.stdout)}
            log(f"streaming: {multiple}x chunk, read-ahead {prefetch}: round "
                f"{point['round_s']:.2f} s, peak RSS of a round {point['peak_rss_mib']:.0f} "
                f"MiB (whole fit {point['fit_peak_rss_mib']:.0f} MiB)")
            series.append(point)
        shutil.rmtree(path)
    rows = np.array([p["n_rows"] for p in points], dtype=float)
    secs = np.array([p["round_s"] for p in points])
    slope, intercept = np.polyfit(rows, secs, 1)
    fitted = slope * rows + intercept
    r2 = 1.0 - np.sum((secs - fitted) ** 2) / np.sum((secs - secs.mean()) ** 2)
    rss = [p["peak_rss_mib"] for p in points]
    ahead = {p["multiple"]: p["peak_rss_mib"] for p in read_ahead}
    first, last = cfg["multiples"][0], cfg["multiples"][-1]
    return {"settings": cfg, "points": points, "read_ahead_points": read_ahead,
            "linear_fit": {"s_per_million_rows": slope * 1e6, "intercept_s": intercept,
                           "r2": float(r2)},
            "rss_growth_mib": rss[-1] - rss[0],
            "rss_growth_read_ahead_mib": ahead[last] - ahead[first],
            "rss_growth_read_ahead_from_5x_mib": (ahead[last] - ahead[5] if 5 in ahead
                                                  else None),
            "chunk_mib": chunk * d * 4 / 2**20,
            "data_growth_mib": points[-1]["data_mib"] - points[0]["data_mib"]}


# -- report ----------------------------------------------------------------------------------
def plot(report: dict[str, Any], path: Path) -> None:
    """Four panels: MNIST curve, sharing, expanded problems, streaming."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(12, 9))
    m = report["mnist"]
    ax = axes[0, 0]
    ax.plot(m["rounds"], np.array(m["test_error"]) * 100, label="ShareBoost anchors, test")
    ax.plot(m["rounds"], np.array(m["train_error"]) * 100, ":", color="C0",
            label="ShareBoost anchors, train")
    ax.axhline(m["svm_error"] * 100, color="k", ls="--",
               label=f"RBF-SVM ({m['svm_support_vectors']} SVs)")
    ax.set_ylim(0, max(10.0, 2 * m["svm_error"] * 100))
    ax.set(xlabel="rounds (anchors)", ylabel="test error (%)",
           title=f"MNIST, PCA-50, {m['settings']['n_train']} training rows, "
                 f"l2={m['settings']['l2']:g}")
    ax.legend()

    s = report["sharing"]
    ax = axes[0, 1]
    ks = s["settings"]["class_counts"]
    for i, target in enumerate(s["settings"]["targets"]):
        key = f"{target:.2f}"
        for method, style in (("shareboost", "--"), ("one_vs_rest", "-o")):
            need = s["needed"][key][method]
            exponent = need["exponent_of_median"]
            label = (f"{method.replace('_', '-')} ({target:.0%} error"
                     + (f", exponent {exponent:.2f})" if exponent is not None else ")"))
            ax.plot(ks, [np.nan if v is None else v for v in need["median"]], style,
                    color=f"C{i}", label=label)
            ax.fill_between(ks, [np.nan if v is None else v for v in need["min"]],
                            [np.nan if v is None else v for v in need["max"]],
                            color=f"C{i}", alpha=0.12)
    ax.plot(ks, ks, ":", color="C7", label="features = classes")
    ax.set_xscale("log")
    ax.set_xticks(ks, [str(k) for k in ks])
    ax.minorticks_off()
    ax.set(yscale="log", xlabel="classes", ylabel="features needed",
           title=f"letter: features for a fixed test error "
                 f"(median, range over {s['settings']['orderings']} class orders)")
    ax.legend(fontsize=7)

    ax = axes[1, 0]
    for i, (name, r) in enumerate(report["expanded"]["datasets"].items()):
        d = r["n_features"]
        sb = r["shareboost_linear"]
        ax.plot(np.array(sb["n_features"]) / d, np.array(sb["test_error"]) * 100, "-",
                color=f"C{i}", label=f"{name}: ShareBoost linear")
        lr = sorted(r["l1_logistic"]["path"], key=lambda p: p["n_features"])
        ax.plot([p["n_features"] / d for p in lr], [p["test_error"] * 100 for p in lr], "o:",
                color=f"C{i}", label=f"{name}: L1 logistic path")
    ax.set(xscale="log", xlabel="fraction of features used", ylabel="test error (%)",
           title="pairwise-product features (App. A.3)")
    ax.set_ylim(0, 40)
    ax.legend(fontsize=8)

    ax = axes[1, 1]
    st = report["streaming"]
    rows = [p["n_rows"] for p in st["points"]]
    ax.plot(rows, [p["round_s"] for p in st["points"]], "o-", label="round time (s)")
    ax.set(xlabel="rows", ylabel="seconds per round",
           title=f"one round, chunks of {st['settings']['chunk_rows']} rows")
    ax2 = ax.twinx()
    ax2.plot(rows, [p["peak_rss_mib"] for p in st["points"]], "s--", color="C3",
             label="peak RSS of a round (MiB)")
    ax2.plot(rows, [p["peak_rss_mib"] for p in st["read_ahead_points"]], "^--", color="C1",
             label=f"same, {st['settings']['prefetch']} chunks read ahead")
    ax2.plot(rows, [p["data_mib"] for p in st["points"]], ":", color="C7",
             label="data size (MiB)")
    ax2.set_ylabel("MiB")
    ax.legend(loc="upper left")
    ax2.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def sharing_table(s: dict[str, Any], count: str = "needed") -> tuple[list[str],
                                                                     list[list[Any]]]:
    """Columns and rows of a feature-sharing part: features needed per class count and
    target, median over class orders (range), and the growth exponents; ``count`` is
    ``"needed"`` (raw features) or ``"needed_columns"`` (the paper's features)."""
    sharing_rows: list[list[Any]] = []
    ks = s["settings"]["class_counts"]

    def cell(need: dict[str, Any], i: int) -> str:
        med, low, high = need["median"][i], need["min"][i], need["max"][i]
        if med is None:
            return "-"
        spread = f"{low}-{high if high is not None else 'never'}"
        return f"{med:g} ({spread})" if low != high else f"{med:g}"

    for i, k in enumerate(ks):
        row: list[Any] = [k]
        for target in s["settings"]["targets"]:
            need = s[count][f"{target:.2f}"]
            row += [cell(need["shareboost"], i), cell(need["one_vs_rest"], i)]
        sharing_rows.append(row)
    row = ["growth exponent"]
    for target in s["settings"]["targets"]:
        for method in ("shareboost", "one_vs_rest"):
            need = s[count][f"{target:.2f}"][method]
            per = [e for e in need["exponent_per_order"] if e is not None]
            med = need["exponent_of_median"]
            row.append("-" if med is None else
                       f"{med:.2f} ({min(per):.2f}-{max(per):.2f})" if per else f"{med:.2f}")
    sharing_rows.append(row)
    sharing_cols = ["classes"]
    for target in s["settings"]["targets"]:
        sharing_cols += [f"ShareBoost @{target:.0%}", f"one-vs-rest @{target:.0%}"]
    return sharing_cols, sharing_rows


def report_tables(report: dict[str, Any]) -> dict[str, Any]:
    """Title, summary and tables of a result for ``bench/REPORT.md``."""
    m, s, st = report["mnist"], report["sharing"], report["streaming"]
    low, high = (f"{t:.2f}" for t in s["settings"]["targets"])
    n_classes = s["settings"]["class_counts"][-1]
    ovr_last = max((k for k, v in zip(s["settings"]["class_counts"],
                                      s["needed"][high]["one_vs_rest"]["median"], strict=True)
                    if v is not None), default=0)

    def shown(value: float | None, spec: str) -> str:  # a level a quick run may not reach
        return "(not reached)" if value is None else format(value, spec)

    needed_low, needed_high = s["needed"][low], s["needed"][high]
    sharing = (f"Feature sharing on letter: ShareBoost needs "
               f"{shown(needed_low['shareboost']['median'][-1], 'g')} features for "
               f"{float(low):.0%} test error with all {n_classes} classes against "
               f"{shown(needed_low['one_vs_rest']['median'][-1], 'g')} for greedy "
               f"one-vs-rest; the count grows as classes^"
               f"{shown(needed_low['shareboost']['exponent_of_median'], '.2f')} against "
               f"classes^{shown(needed_low['one_vs_rest']['exponent_of_median'], '.2f')} "
               f"(^{shown(needed_high['shareboost']['exponent_of_median'], '.2f')} against "
               f"^{shown(needed_high['one_vs_rest']['exponent_of_median'], '.2f')} for "
               f"{float(high):.0%}, which one-vs-rest, in the median class order, does not "
               f"reach beyond {ovr_last} classes). ")
    sharing_cols, sharing_rows = sharing_table(s)
    expanded_rows = []
    for name, r in report["expanded"]["datasets"].items():
        sb, sbs, gb = r["shareboost_linear"], r["shareboost_stumps"], r["gradient_boosting"]
        d = r["n_features"]
        for frac in (0.02, 0.05, 0.1, 0.2):
            budget = max(1, round(frac * d))
            lin = [e for n, e in zip(sb["n_features"], sb["test_error"], strict=True)
                   if n <= budget]
            l1 = [p["test_error"] for p in r["l1_logistic"]["path"] if p["n_features"] <= budget]
            stp = [e for n, e in zip(sbs["n_features"], sbs["test_error"], strict=True)
                   if n <= budget]
            gbe = [e for n, e in zip(gb["n_features"], gb["test_error"], strict=True)
                   if n <= budget]
            expanded_rows.append([name, f"{frac:.0%} ({budget})",
                                  min(lin) if lin else None, min(l1) if l1 else None,
                                  min(stp) if stp else None, min(gbe) if gbe else None])
    stream_rows = [[p["multiple"], p["n_rows"], round(p["data_mib"], 1),
                    round(p["round_s"], 3), round(p["peak_rss_mib"], 1),
                    round(a["round_s"], 3), round(a["peak_rss_mib"], 1)]
                   for p, a in zip(st["points"], st["read_ahead_points"], strict=True)]
    return {
        "title": "ShareBoost (paper 003)",
        "summary": (f"MNIST PCA-50 anchors ({m['settings']['n_train']} training rows, "
                    f"l2 = {m['settings']['l2']:g} chosen on a validation split of the "
                    f"training rows): {m['final_error']:.2%} test error after "
                    f"{m['rounds'][-1]} anchors, fit in {m['shareboost_fit_s']:.0f} s "
                    f"(best {m['best_error']:.2%} at {m['best_round']}) against RBF-SVM "
                    f"{m['svm_error']:.2%} with {m['svm_support_vectors']} support vectors. "
                    f"{sharing}Streaming: a round at 20x the chunk size grows peak RSS by "
                    f"{st['rss_growth_mib']:.0f} MiB over 1x ("
                    f"{st['rss_growth_read_ahead_mib']:.0f} MiB with read-ahead, a queue of "
                    f"{st['settings']['prefetch']} chunks of {st['chunk_mib']:.0f} MiB) while "
                    f"the data grow by {st['data_growth_mib']:.0f} MiB; time per round fits "
                    f"a line in rows with r^2 = {st['linear_fit']['r2']:.3f}."),
        "tables": [
            {"title": "letter: features needed to reach a test error",
             "columns": sharing_cols, "rows": sharing_rows,
             "notes": f"first k classes of letter in {s['settings']['orderings']} class "
                      "orders (A-Z and seeded permutations), raw and pairwise-product "
                      "features; median over orders (range); one-vs-rest: binary ShareBoost "
                      "per class, same rounds for all, argmax of margins; features = "
                      "distinct columns over all classes; never / -: not reached; growth "
                      "exponent: least-squares slope of log features on log classes over "
                      "the class counts reached (1 = linear), for the medians and "
                      "(range) per order."},
            *([{"title": "letter, decision stumps: features needed to reach a test error",
                "columns": sharing_table(report["sharing_stumps"])[0],
                "rows": sharing_table(report["sharing_stumps"])[1],
                "notes": "as the table above, every candidate column a decision stump "
                         f"({report['sharing_stumps']['settings']['n_rounds']} rounds for "
                         "ShareBoost, "
                         f"{report['sharing_stumps']['settings']['ovr_rounds']} per binary "
                         "one-vs-rest model); features = distinct raw or product features "
                         "the selected stumps cut."}]
              if "sharing_stumps" in report else []),
            *([{"title": "letter, decision stumps: stumps (the paper's features) needed to "
                         "reach a test error",
                "columns": sharing_table(report["sharing_stumps"], "needed_columns")[0],
                "rows": sharing_table(report["sharing_stumps"], "needed_columns")[1],
                "notes": "the same fits as the table above; features = distinct stumps "
                         "(feature and threshold) over all classes, each a column of W "
                         "(Sec. 3.1)."}]
              if "needed_columns" in report.get("sharing_stumps", {}) else []),
            *([{"title": "letter, anchor pieces: pieces needed to reach a test error",
                "columns": sharing_table(report["sharing_anchors"], "needed_columns")[0],
                "rows": sharing_table(report["sharing_anchors"], "needed_columns")[1],
                "notes": "as the tables above on letter's 16 raw features, every candidate "
                         "an anchor piece (a ball and its d + 1 columns, Sec. 3.2) "
                         f"({report['sharing_anchors']['settings']['n_rounds']} rounds for "
                         "ShareBoost, "
                         f"{report['sharing_anchors']['settings']['ovr_rounds']} per binary "
                         "one-vs-rest model, each drawing its own balls); features = "
                         "pieces over all classes."}]
              if "sharing_anchors" in report else []),
            {"title": "expanded problems: best test error within a feature budget",
             "columns": ["dataset", "features used", "ShareBoost linear", "L1 logistic",
                         "ShareBoost stumps", "gradient-boosted stumps"],
             "rows": expanded_rows,
             "notes": "budget as a fraction of the pairwise-product features; stumps count "
                      "distinct features split on."},
            {"title": "streaming: one round against rows",
             "columns": ["x chunk", "rows", "data MiB", "round s", "peak RSS MiB",
                         "round s (read-ahead)", "peak RSS MiB (read-ahead)"],
             "rows": stream_rows,
             "notes": "zarr store on disk, fresh process per size; round = column-score pass "
                      "and corrective step (selected columns recomputed per chunk, no per-row "
                      "cache); peak RSS = VmHWM of rounds 2-4 (reset after round 1); first "
                      "columns: chunks read in the fitting thread, what the fit itself holds; "
                      f"read-ahead: {st['settings']['prefetch']} chunks read ahead in a "
                      "background thread, a queue that fills from "
                      f"{st['settings']['prefetch'] + 1} chunks on and then stays bounded."},
        ],
        "plots": ["shareboost.png"],
    }


def main(argv: list[str] | None = None) -> None:
    """Run every measurement and write the results."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (a few minutes)")
    parser.add_argument("--only", nargs="*", choices=["mnist", "sharing", "sharing_stumps",
                                                      "sharing_anchors",
                                                      "expanded", "streaming"],
                        help="run these parts and keep the others from the last results "
                             "(none: only rebuild the report from them)")
    parser.add_argument("--mnist-rows", type=int, help="override the MNIST training rows")
    parser.add_argument("--mnist-centres", type=int, help="override the anchor centres")
    parser.add_argument("--mnist-rounds", type=int, help="override the anchor rounds")
    parser.add_argument("--mnist-validation-rounds", type=int,
                        help="override the rounds of the validation fits")
    parser.add_argument("--mnist-validation-l2", type=float, nargs="+",
                        help="override the l2 values of the validation grid")
    parser.add_argument("--mnist-validation-only", action="store_true",
                        help="stop the mnist part after its validation grid")
    parser.add_argument("--gate", choices=["hard", "soft"], default="hard",
                        help="the anchors' gates (hard: the paper's balls)")
    parser.add_argument("--gate-width", type=float, nargs="+", default=[0.6],
                        help="soft gates: ramp widths (fractions of r^2) the validation "
                             "grid tries")
    parser.add_argument("--run-name",
                        help="write the parts run to results/shareboost_runs/NAME.json")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR)
    parser.add_argument("--measure-round", help=argparse.SUPPRESS)
    parser.add_argument("--chunk-rows", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--prefetch", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure_round:
        print(json.dumps(measure_round(args.measure_round, args.chunk_rows, args.prefetch)))
        return
    mode = "quick" if args.quick else "full"
    cfg = {name: dict(part) for name, part in CONFIGS[mode].items()}
    for flag, key in (("mnist_rows", "n_train"), ("mnist_centres", "n_centres"),
                      ("mnist_rounds", "n_rounds")):
        if getattr(args, flag) is not None:
            cfg["mnist"][key] = getattr(args, flag)
    cfg["mnist"]["validation"] = dict(cfg["mnist"]["validation"])
    if args.mnist_validation_rounds is not None:
        cfg["mnist"]["validation"]["n_rounds"] = args.mnist_validation_rounds
    if args.mnist_validation_l2 is not None:
        cfg["mnist"]["validation"]["l2"] = list(args.mnist_validation_l2)
    cfg["mnist"]["validation_only"] = bool(args.mnist_validation_only)
    cfg["mnist"]["gate"] = args.gate
    if args.gate == "soft":
        cfg["mnist"]["gate_width"] = list(args.gate_width)
    runners = {"mnist": mnist_anchors, "sharing": feature_sharing,
               "sharing_stumps": feature_sharing, "sharing_anchors": feature_sharing,
               "expanded": expanded,
               "streaming": streaming}
    parts = list(runners) if args.only is None else args.only
    out_file = args.out / "shareboost.json"
    if args.run_name:  # a run of its own, beside the recorded results
        out_file = args.out / "shareboost_runs" / f"{args.run_name}.json"
    report: dict[str, Any] = {}
    if args.only is not None and out_file.exists() and not args.run_name:
        report = json.loads(out_file.read_text())
    # parts kept from the last results keep the load their run started at
    previous_load = report.get("machine", {}).get("load_average_1m")
    for part in runners:
        if isinstance(report.get(part), dict):
            report[part].setdefault("load_average_1m", previous_load)
    report.update({"benchmark": "shareboost", "mode": mode, "machine": machine_info(),
                   "versions": library_versions(("numpy", "numba", "zarr", "pyarrow",
                                                 "scikit-learn", "streamlearn"))})
    for part in parts:
        load, start = round(os.getloadavg()[0], 2), time.perf_counter()
        report[part] = runners[part](cfg[part])
        report[part]["runtime_s"] = time.perf_counter() - start
        report[part]["load_average_1m"] = load
        log(f"{part}: {report[part]['runtime_s']:.0f} s")
    loads = [report[part].get("load_average_1m") for part in runners if part in report]
    if loads and None not in loads:  # the report lists one load: the highest of the parts'
        report["machine"]["load_average_1m"] = max(loads)
    out_file.parent.mkdir(parents=True, exist_ok=True)
    # a run of its own, or a partial run: the parts so far
    if args.run_name or not all(part in report for part in runners):
        out_file.write_text(json.dumps(report, indent=2) + "\n")
        return
    out_file.write_text(json.dumps(report, indent=2) + "\n")  # kept if the tables fail
    report.update(report_tables(report))
    out_file.write_text(json.dumps(report, indent=2) + "\n")
    plot(report, args.out / "shareboost.png")
    print(report["summary"])
    for table in report["tables"]:
        print(f"\n{table['title']}\n" + " | ".join(table["columns"]))
        for row in table["rows"]:
            print(" | ".join("-" if v is None else f"{v:.4f}" if isinstance(v, float) else str(v)
                             for v in row))


if __name__ == "__main__":
    main()
