"""Super-sparse machines (paper 004): few learned prototypes against SVMs and kernel ridge/LASSO.

Three parts, each measured side by side in one run:

1. **Image problem** (Sec. IV-A's SSVM): two confusable MNIST digits (4 vs 9), pixels scaled
   to [0, 1] and PCA-reduced. An RBF-SVM (scikit-learn ``SVC``) is reduced by
   ``SuperSparseClassifier.reduce`` to p in {2, 5, 10, 20} virtual prototypes, against
   prototype selection at the same p (random training rows; the training row nearest each
   k-means centre) with coefficients fitted to the same SVM scores. Test accuracy,
   prototypes / support vectors, prediction rows/s; the learned prototypes are drawn (Fig. 6).
2. **Age regression** (Sec. IV-B, Table I's layout): ``age`` from the other columns of the
   UCI adult census files (official train/test split, categoricals one-hot). Mean absolute
   error of kernel ridge and LASSO over similarities to a large random subset of training
   rows, SRidge/SLASSO with p chosen by eq. 8, and random / k-means prototypes at that p.
3. **Streaming**: one beta-step (Gram) pass and one prototype-gradient pass over generated
   zarr stores of growing size, each in a fresh process: seconds, rows/s and peak RSS.
4. **Many classes**: pendigits, satimage, usps and letter (10, 6, 10 and 26 classes) with
   ``SuperSparseClassifier``'s defaults, one pool of prototypes shared by all classes
   (``min(max(50, 10 K), n / 10)`` for ``K`` classes and ``n`` rows), against one-vs-rest
   binary super-sparse machines (scikit-learn's ``OneVsRestClassifier``) with 50
   prototypes in total and with 50 each, a shared pool of at most 10
   prototypes per class and at most a tenth of the SVM's support vectors, an RBF-SVM
   (``SVC``) and its reduction to 50 shared prototypes: test accuracy, prototypes evaluated
   per prediction, fit seconds and prediction rows/s.

Run ``STREAMLEARN_DATA=/work/shared/data python bench/supersparse.py`` (full) or with
``--quick``; ``--parts streaming,classes`` re-measures some parts and keeps the others from
the results file (each part records when it was measured). Results:
``bench/results/supersparse.{json,png}`` and ``supersparse_prototypes.png``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from machine_info import library_versions, machine_info, peak_rss_bytes

BENCH_DIR = Path(__file__).resolve().parent
DATA_DIR = BENCH_DIR / "data" / "supersparse"
RESULTS_DIR = BENCH_DIR / "results"
SEED = 4

DIGITS = (4, 9)
P_GRID = (2, 5, 10, 20)
ADULT_COLUMNS = ("age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
                 "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
                 "hours-per-week", "native-country", "income")
ADULT_NUMERIC = ("fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week")
ADULT_P_GRID = (2, 5, 10, 20, 50)
STREAM_FEATURES = 8
STREAM_PROTOTYPES = 10
STREAM_ZARR_CHUNK = 1 << 16
STREAM_CHUNK_ROWS = 1 << 17
CLASS_DATASETS = ("pendigits", "satimage", "usps", "letter")
#: Prototypes of the shared pool (``SuperSparseClassifier()``'s ``n_prototypes="auto"`` at
#: these sizes) and of each one-vs-rest model in the "50 each" row.
CLASS_PROTOTYPES = 50
#: The larger shared pool: at most this many prototypes per class ...
PER_CLASS_PROTOTYPES = 10
#: ... and at least this many times fewer than the RBF-SVM's support vectors.
FEWER_THAN_SVS = 10

SETTINGS = {
    "quick": {"pca": 30, "mnist_train": 4000, "svm_C": 10.0, "kernel_basis": 600,
              "adult_train": 8000, "max_iter": 300, "adult_max_iter": 20,
              "stream_rows": (250_000, 1_000_000), "predict_repeats": 3,
              "classes_train": 2000, "classes_datasets": ("pendigits", "satimage")},
    "full": {"pca": 30, "mnist_train": None, "svm_C": 10.0, "kernel_basis": 2000,
             "adult_train": None, "max_iter": 500, "adult_max_iter": 40,
             "stream_rows": (1_000_000, 3_000_000, 10_000_000), "predict_repeats": 5,
             "classes_train": None, "classes_datasets": CLASS_DATASETS},
}


def log(message: str) -> None:
    """Progress on stderr."""
    print(message, file=sys.stderr, flush=True)


def data_dir() -> Path:
    """``$STREAMLEARN_DATA``, where the real datasets are."""
    root = os.environ.get("STREAMLEARN_DATA")
    if not root:
        raise SystemExit("set STREAMLEARN_DATA to the directory holding mnist.npz and "
                         "adult.data.gz / adult.test.gz")
    return Path(root)



def rows_per_s(function: Any, X: np.ndarray, repeats: int) -> float:
    """Best-of-``repeats`` rows per second of ``function(X)`` (after one warm-up call)."""
    function(X[:100])
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        function(X)
        best = min(best, time.perf_counter() - t0)
    return X.shape[0] / best


def nearest_rows(X: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """The row of ``X`` nearest each centre (k-means "medians" as real training rows)."""
    d2 = ((X[:, None, :].astype(np.float64) - centres[None]) ** 2).sum(-1)
    return X[np.argmin(d2, axis=0)].astype(np.float64)


# -------------------------------------------------------------------------------- 1. images
def load_digits(root: Path, n_train: int | None, n_components: int) -> dict[str, Any]:
    """Two MNIST digits, scaled to [0, 1], PCA-reduced on the training rows."""
    from sklearn.decomposition import PCA

    data = np.load(root / "mnist.npz")
    out: dict[str, Any] = {}
    for part in ("train", "test"):
        y = data[f"y_{part}"]
        keep = np.flatnonzero(np.isin(y, DIGITS))
        out[f"X_{part}"] = data[f"X_{part}"][keep].reshape(len(keep), -1) / 255.0
        out[f"y_{part}"] = (y[keep] == DIGITS[1]).astype(np.int64)
    if n_train is not None:
        rng = np.random.default_rng(SEED)
        pick = np.sort(rng.choice(len(out["y_train"]), n_train, replace=False))
        out["X_train"], out["y_train"] = out["X_train"][pick], out["y_train"][pick]
    pca = PCA(n_components, random_state=SEED).fit(out["X_train"])
    out["pca"] = pca
    for part in ("train", "test"):
        out[f"Z_{part}"] = pca.transform(out[f"X_{part}"]).astype(np.float32)
    return out


def image_problem(root: Path, cfg: dict[str, Any]) -> dict[str, Any]:
    """RBF-SVM vs its SSVM reductions vs prototype selection at the same p."""
    from sklearn.cluster import KMeans
    from sklearn.svm import SVC

    from streamlearn.models.supersparse import SuperSparseClassifier

    d = load_digits(root, cfg["mnist_train"], cfg["pca"])
    Z, y, Zt, yt = d["Z_train"], d["y_train"], d["Z_test"], d["y_test"]
    gamma = 1.0 / (Z.shape[1] * Z.var())  # scikit-learn's gamma="scale"
    log(f"images: {len(y)} train / {len(yt)} test rows, {Z.shape[1]} PCA components, "
        f"gamma {gamma:.4g}")
    t0 = time.perf_counter()
    svm = SVC(C=cfg["svm_C"], gamma=gamma).fit(Z, y)
    svm_fit_s = time.perf_counter() - t0
    svm_acc = float(np.mean(svm.predict(Zt) == yt))
    n_sv = len(svm.support_)
    svm_rps = rows_per_s(svm.decision_function, Zt, cfg["predict_repeats"])
    log(f"  RBF-SVM: accuracy {svm_acc:.4f}, {n_sv} support vectors, fit {svm_fit_s:.1f} s")
    # the RBF-SVM's own geometry: raw PCA features, its gamma
    # and the paper's plain gradient step of the prototypes
    common = dict(gamma=gamma, standardize=False, lam=1e-4, max_iter=cfg["max_iter"],
                  init="kmeans", solver="batch", random_state=SEED)
    rows = []
    learned: dict[int, Any] = {}
    for p in P_GRID:
        t0 = time.perf_counter()
        ssvm = SuperSparseClassifier.reduce(svm, p, Z, repulsion=0.1, **common)
        fit_s = time.perf_counter() - t0
        learned[p] = ssvm
        centres = KMeans(p, n_init=4, random_state=SEED).fit(Z).cluster_centers_
        selected = {
            "random": SuperSparseClassifier.reduce(
                svm, p, Z, **{**common, "max_iter": 0, "init": "random"}),
            "kmeans": SuperSparseClassifier.reduce(
                svm, p, Z, **{**common, "max_iter": 0, "init": nearest_rows(Z, centres)}),
        }
        # the paper's model: the squared loss to +-1 labels, no squared hinge refit
        labels = SuperSparseClassifier(n_prototypes=p, repulsion=0.1, loss="squared",
                                       **common).fit(Z, y)
        row = {
            "p": p,
            "ssvm_accuracy": float(np.mean(ssvm.predict(Zt) == yt)),
            "ssvm_agreement_with_svm": float(np.mean(ssvm.predict(Zt) == svm.predict(Zt))),
            "ssvm_fit_s": fit_s,
            "ssvm_iterations": ssvm.n_iter_,
            "random_accuracy": float(np.mean(selected["random"].predict(Zt) == yt)),
            "kmeans_accuracy": float(np.mean(selected["kmeans"].predict(Zt) == yt)),
            "labels_accuracy": float(np.mean(labels.predict(Zt) == yt)),
            "ssvm_rows_per_s": rows_per_s(ssvm.decision_function, Zt, cfg["predict_repeats"]),
        }
        row["within_1pt_of_svm"] = bool(row["ssvm_accuracy"] >= svm_acc - 0.01)
        row["sv_ratio"] = n_sv / p
        row["speedup_vs_svm"] = row["ssvm_rows_per_s"] / svm_rps
        log(f"  p={p:2d}: SSVM {row['ssvm_accuracy']:.4f} (fit {fit_s:.1f} s), random "
            f"{row['random_accuracy']:.4f}, k-means {row['kmeans_accuracy']:.4f}, labels "
            f"{row['labels_accuracy']:.4f}; {row['ssvm_rows_per_s']:.3g} rows/s")
        rows.append(row)
    return {"n_train": len(y), "n_test": len(yt), "digits": list(DIGITS),
            "pca_components": int(Z.shape[1]), "gamma": float(gamma), "svm_C": cfg["svm_C"],
            "svm_accuracy": svm_acc, "svm_support_vectors": n_sv, "svm_fit_s": svm_fit_s,
            "svm_rows_per_s": svm_rps, "rows": rows,
            "_models": learned, "_pca": d["pca"]}


# ------------------------------------------------------------------------------ 2. regression
def read_adult(path: Path) -> list[list[str]]:
    """Rows of a raw UCI adult file as lists of stripped strings."""
    rows = []
    with gzip.open(path, "rt", encoding="ascii") as f:
        for line in f:
            parts = [p.strip() for p in line.strip().rstrip(".").split(",")]
            if len(parts) == len(ADULT_COLUMNS):
                rows.append(parts)
    return rows


def adult_matrices(root: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """Features (numerics standardised on train, categoricals one-hot) and ages."""
    train, test = read_adult(root / "adult.data.gz"), read_adult(root / "adult.test.gz")
    index = {c: k for k, c in enumerate(ADULT_COLUMNS)}
    categorical = [c for c in ADULT_COLUMNS if c not in ADULT_NUMERIC and c != "age"]
    levels = {c: sorted({r[index[c]] for r in train}) for c in categorical}

    def encode(rows: list[list[str]]) -> np.ndarray:
        num = np.array([[float(r[index[c]]) for c in ADULT_NUMERIC] for r in rows])
        num[:, [0, 2, 3]] = np.log1p(num[:, [0, 2, 3]])  # fnlwgt and capital amounts
        blocks = [num]
        for c in categorical:
            codes = {v: k for k, v in enumerate(levels[c])}
            onehot = np.zeros((len(rows), len(codes)))
            for i, r in enumerate(rows):
                k = codes.get(r[index[c]])
                if k is not None:
                    onehot[i, k] = 1.0
            blocks.append(onehot)
        return np.hstack(blocks)

    X, Xt = encode(train), encode(test)
    mean, std = X[:, :len(ADULT_NUMERIC)].mean(0), X[:, :len(ADULT_NUMERIC)].std(0)
    for M in (X, Xt):
        M[:, :len(ADULT_NUMERIC)] = (M[:, :len(ADULT_NUMERIC)] - mean) / std
    y = np.array([float(r[0]) for r in train])
    yt = np.array([float(r[0]) for r in test])
    return X.astype(np.float32), y, Xt.astype(np.float32), yt, len(categorical)


def age_problem(root: Path, cfg: dict[str, Any]) -> dict[str, Any]:
    """Table I's layout on the adult census: kernel ridge/LASSO vs SRidge/SLASSO vs selection."""
    from sklearn.cluster import KMeans

    from streamlearn.models.supersparse import SuperSparseRegressor, solve_beta
    from streamlearn.solvers.prototypes import rbf_similarities

    X, y, Xt, yt, n_cat = adult_matrices(root)
    rng = np.random.default_rng(SEED)
    if cfg["adult_train"] is not None:
        pick = np.sort(rng.choice(len(y), cfg["adult_train"], replace=False))
        X, y = X[pick], y[pick]
    sample = X[rng.choice(len(y), 2000, replace=False)].astype(np.float64)
    d2 = ((sample[:1000, None, :] - sample[None, 1000:]) ** 2).sum(-1)
    gamma = float(1.0 / np.median(d2))  # median heuristic
    log(f"age: {len(y)} train / {len(yt)} test rows, {X.shape[1]} features, gamma {gamma:.4g}")
    results: dict[str, Any] = {"n_train": len(y), "n_test": len(yt),
                               "n_features": int(X.shape[1]), "gamma": gamma,
                               "categorical_columns": n_cat}
    mae = lambda f: float(np.mean(np.abs(f - yt)))  # noqa: E731
    results["mean_predictor_mae"] = mae(np.full_like(yt, y.mean()))

    # kernel ridge / LASSO over similarities to a random subset of training rows
    basis = X[rng.choice(len(y), cfg["kernel_basis"], replace=False)].astype(np.float64)
    S, St = rbf_similarities(X, basis, gamma), rbf_similarities(Xt, basis, gamma)
    lam_ridge, lam_lasso = 1e-3, 2e-3
    # the same objective and solvers as SRidge / SLASSO, on all basis similarities at once
    Zs = np.hstack([S, np.ones((len(y), 1))])
    A, b = Zs.T @ Zs / len(y), Zs.T @ y / len(y)
    t0 = time.perf_counter()
    w_ridge = solve_beta(A, b, lam_ridge, "ridge")
    ridge_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    w_lasso = solve_beta(A, b, lam_lasso, "lasso")
    lasso_s = time.perf_counter() - t0
    ridge = lambda M: M @ w_ridge[:-1] + w_ridge[-1]  # noqa: E731
    lasso = lambda M: M @ w_lasso[:-1] + w_lasso[-1]  # noqa: E731
    table = [
        {"method": "kernel Ridge", "mae": mae(ridge(St)),
         "prototypes": len(basis), "fit_s": ridge_s},
        {"method": "kernel LASSO", "mae": mae(lasso(St)),
         "prototypes": int(np.count_nonzero(w_lasso[:-1])), "fit_s": lasso_s},
    ]
    log(f"  kernel ridge MAE {table[0]['mae']:.3f} ({len(basis)}), LASSO "
        f"{table[1]['mae']:.3f} ({table[1]['prototypes']})")
    selection = {}
    for coef, lam in (("ridge", lam_ridge), ("lasso", lam_lasso)):
        name = "SRidge" if coef == "ridge" else "SLASSO"
        t0 = time.perf_counter()
        model = SuperSparseRegressor(n_prototypes=list(ADULT_P_GRID), gamma=gamma,
                                     standardize=False, lam=lam,
                                     coef=coef, max_iter=cfg["adult_max_iter"], tradeoff=0.01,
                                     repulsion=0.1, init="kmeans", solver="batch",
                                     random_state=SEED).fit(X, y)
        fit_s = time.perf_counter() - t0
        p = model.n_prototypes_
        used = int(np.count_nonzero(model.dual_coef_))
        table.append({"method": name, "mae": mae(model.predict(Xt)), "prototypes": used,
                      "p": p, "fit_s": fit_s})
        selection[name] = model.selection_path_.tolist()
        centres = KMeans(p, n_init=4, random_state=SEED).fit(X).cluster_centers_
        for label, init in (("PSR", "random"), ("PSKM", nearest_rows(X, centres))):
            base = SuperSparseRegressor(n_prototypes=p, gamma=gamma, standardize=False,
                                        lam=lam, coef=coef,
                                        max_iter=0, init=init, random_state=SEED).fit(X, y)
            table.append({"method": f"{label} {name[1:]}", "mae": mae(base.predict(Xt)),
                          "prototypes": int(np.count_nonzero(base.dual_coef_)), "p": p,
                          "fit_s": None})
        log("  " + "; ".join(f"{r['method']} {r['mae']:.3f} ({r['prototypes']})"
                             for r in table[-3:]))
    results["table"] = table
    results["selection_path"] = selection
    results["lam"] = {"ridge": lam_ridge, "lasso": lam_lasso}
    results["kernel_basis"] = len(basis)
    return results


# ------------------------------------------------------------------------------- 3. streaming
def make_store(n_rows: int) -> Path:
    """A zarr store ``X`` (n, 8) float32, ``y`` float32 = smooth function + noise."""
    import zarr

    path = DATA_DIR / f"stream_n{n_rows}.zarr"
    done = DATA_DIR / f"stream_n{n_rows}.complete"
    if done.exists():
        return path
    group = zarr.open_group(path, mode="w", zarr_format=3)
    X = group.create_array("X", shape=(n_rows, STREAM_FEATURES),
                           chunks=(STREAM_ZARR_CHUNK, STREAM_FEATURES), dtype="float32")
    y = group.create_array("y", shape=(n_rows,), chunks=(STREAM_ZARR_CHUNK,), dtype="float32")
    block = 1 << 20
    for a in range(0, n_rows, block):
        b = min(a + block, n_rows)
        rng = np.random.default_rng([SEED, a])
        x = rng.uniform(-2, 2, size=(b - a, STREAM_FEATURES)).astype(np.float32)
        X[a:b] = x
        y[a:b] = (np.sin(x[:, 0]) * np.cos(x[:, 1]) + 0.1 * x[:, 2]
                  + 0.05 * rng.standard_normal(b - a)).astype(np.float32)
    done.touch()
    return path


def measure_stream(path: str) -> dict[str, Any]:
    """In this (fresh) process: one Gram pass and one gradient pass over the store."""
    from streamlearn.data import open_dataset
    from streamlearn.engine import LocalEngine
    from streamlearn.models.supersparse import (
        GradientPass,
        GramPass,
        Similarity,
        TargetRows,
        solve_beta,
    )

    dataset = open_dataset(path, target="y", task="regression", chunk_rows=STREAM_CHUNK_ROWS)
    engine = LocalEngine(progress=False)
    rng = np.random.default_rng(SEED)
    C = rng.uniform(-2, 2, size=(STREAM_PROTOTYPES, STREAM_FEATURES))
    similarity, rows = Similarity(0.25), TargetRows("regression")
    warm = (0, min(dataset.n_rows, 4096))  # compile/load the kernels outside the timings
    engine.run(GradientPass(rows, C, np.zeros(STREAM_PROTOTYPES + 1), similarity), dataset,
               rows=warm)
    engine.run(GramPass(rows, C, similarity), dataset, rows=warm)
    baseline_rss = peak_rss_bytes()
    t0 = time.perf_counter()
    stats = engine.run(GramPass(rows, C, similarity), dataset)
    gram_s = time.perf_counter() - t0
    w = solve_beta(stats.G / stats.weight, stats.r / stats.weight, 1e-3, "ridge")
    t0 = time.perf_counter()
    grad = engine.run(GradientPass(rows, C, w, similarity), dataset)
    grad_s = time.perf_counter() - t0
    return {"rows": int(stats.rows), "gram_s": gram_s, "gradient_s": grad_s,
            "gram_rows_per_s": stats.rows / gram_s, "gradient_rows_per_s": stats.rows / grad_s,
            "gradient_norm": float(np.linalg.norm(grad.grad)),
            "rss_before_passes_mib": baseline_rss / 2**20, "peak_rss_mib": peak_rss_bytes() / 2**20}


def streaming(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    """Growth series: each store size measured in a fresh process."""
    out = []
    for n in cfg["stream_rows"]:
        t0 = time.perf_counter()
        path = make_store(n)
        gen_s = time.perf_counter() - t0
        done = subprocess.run([sys.executable, __file__, "--measure-stream", str(path)],
                              capture_output=True, text=True, check=True)
        m = json.loads(done.stdout.strip().splitlines()[-1])
        m.update({"n_rows": n, "data_bytes": n * (STREAM_FEATURES + 1) * 4,
                  "generate_s": gen_s})
        log(f"  streaming {n:>11,} rows: Gram {m['gram_s']:.1f} s, gradient "
            f"{m['gradient_s']:.1f} s, peak RSS {m['peak_rss_mib']:.0f} MiB "
            f"(data {m['data_bytes'] / 2**20:.0f} MiB)")
        out.append(m)
    return out


# ------------------------------------------------------------------------------- reporting
# ----------------------------------------------------------------------------- 4. many classes
def many_classes(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    """Shared prototypes against one-vs-rest super-sparse machines and an RBF-SVM.

    Imports here, not at the top: the streaming part's children measure their memory, and
    these imports are not theirs.
    """
    import warnings

    from out_of_the_box import load, subsample
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.multiclass import OneVsRestClassifier
    from sklearn.svm import SVC

    from streamlearn.models.supersparse import SuperSparseClassifier

    out = []
    for name in cfg["classes_datasets"]:
        X, y, Xt, yt = load(name)
        X, y = subsample(X, y, cfg["classes_train"], SEED)
        k = len(np.unique(y))
        each = -(-CLASS_PROTOTYPES // k)  # one-vs-rest with the same prototypes in total
        log(f"classes: {name}, {len(y)} train / {len(yt)} test rows, {X.shape[1]} features, "
            f"{k} classes")
        svm = SVC(C=cfg["svm_C"], gamma="scale")
        gamma = 1.0 / (X.shape[1] * X.var())  # the SVM's, for its reduction
        methods = {
            "shared": lambda: SuperSparseClassifier(random_state=SEED),
            "shared_per_class": lambda k=k, svm=svm: SuperSparseClassifier(
                n_prototypes=min(PER_CLASS_PROTOTYPES * k,
                                 len(svm.support_) // FEWER_THAN_SVS), random_state=SEED),
            "ovr_same_total": lambda e=each: OneVsRestClassifier(
                SuperSparseClassifier(n_prototypes=e, random_state=SEED)),
            "ovr_50_each": lambda: OneVsRestClassifier(
                SuperSparseClassifier(n_prototypes=CLASS_PROTOTYPES, random_state=SEED)),
        }
        row: dict[str, Any] = {"dataset": name, "n_train": len(y), "n_test": len(yt),
                               "n_features": int(X.shape[1]), "n_classes": k}
        t0 = time.perf_counter()
        svm.fit(X, y)
        row["svm"] = {"accuracy": float(svm.score(Xt, yt)), "fit_s": time.perf_counter() - t0,
                      "prototypes": len(svm.support_),
                      "rows_per_s": rows_per_s(svm.decision_function, Xt,
                                               cfg["predict_repeats"])}
        log(f"  RBF-SVM {row['svm']['accuracy']:.4f}, {len(svm.support_)} SVs")
        for key, make in methods.items():
            model = make()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", ConvergenceWarning)
                t0 = time.perf_counter()
                model.fit(X, y)
                fit_s = time.perf_counter() - t0
            members = getattr(model, "estimators_", [model])
            row[key] = {"accuracy": float(model.score(Xt, yt)), "fit_s": fit_s,
                        "prototypes": int(sum(m.n_prototypes_ for m in members)),
                        "rows_per_s": rows_per_s(model.decision_function, Xt,
                                                 cfg["predict_repeats"]),
                        "convergence_warnings": sum(issubclass(w.category, ConvergenceWarning)
                                                    for w in caught)}
            log(f"  {key}: {row[key]['accuracy']:.4f} with {row[key]['prototypes']} "
                f"prototypes, fit {fit_s:.1f} s")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            t0 = time.perf_counter()
            reduced = SuperSparseClassifier.reduce(svm, CLASS_PROTOTYPES, X, gamma=gamma,
                                                   standardize=False, random_state=SEED)
            fit_s = time.perf_counter() - t0
        row["svm_reduced"] = {
            "accuracy": float(reduced.score(Xt, yt)), "fit_s": fit_s,
            "prototypes": reduced.n_prototypes_,
            "agreement_with_svm": float(np.mean(reduced.predict(Xt) == svm.predict(Xt))),
            "rows_per_s": rows_per_s(reduced.decision_function, Xt, cfg["predict_repeats"]),
            "convergence_warnings": sum(issubclass(w.category, ConvergenceWarning)
                                        for w in caught)}
        log(f"  SVM reduced: {row['svm_reduced']['accuracy']:.4f}")
        out.append(row)
    return out


CLASS_METHODS = (("shared", "shared pool (defaults)"),
                 ("shared_per_class", f"shared pool, <= {PER_CLASS_PROTOTYPES} per class and "
                                      f"<= SVs / {FEWER_THAN_SVS}"),
                 ("ovr_same_total", f"one-vs-rest, {CLASS_PROTOTYPES} in total"),
                 ("ovr_50_each", f"one-vs-rest, {CLASS_PROTOTYPES} each"),
                 ("svm_reduced", f"RBF-SVM reduced to {CLASS_PROTOTYPES}"),
                 ("svm", "RBF-SVM"))


def plot(report: dict[str, Any], models: dict[int, Any] | None, pca: Any,
         out_dir: Path) -> None:
    """``supersparse.png`` (accuracy vs p, streaming growth) and, when the image part's
    ``models`` were fitted in this run, the prototypes' picture."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    img = report["image"]
    ps = [r["p"] for r in img["rows"]]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    ax = axes[0]
    ax.axhline(img["svm_accuracy"], color="k", ls="--",
               label=f"RBF-SVM ({img['svm_support_vectors']} SVs)")
    for key, label in (("ssvm_accuracy", "SSVM (reduction)"), ("labels_accuracy",
                       "super-sparse on labels"), ("kmeans_accuracy", "k-means prototypes"),
                       ("random_accuracy", "random prototypes")):
        ax.plot(ps, [r[key] for r in img["rows"]], "o-", label=label)
    ax.set_xscale("log")
    ax.set_xticks(ps, [str(p) for p in ps])
    ax.minorticks_off()
    ax.set_xlabel("prototypes p")
    ax.set_ylabel("test accuracy")
    ax.set_title(f"MNIST {DIGITS[0]} vs {DIGITS[1]}, PCA {img['pca_components']}")
    ax.legend(fontsize=8)
    ax = axes[1]
    st = report["streaming"]
    n = [s["n_rows"] for s in st]
    ax.plot(n, [s["gram_s"] for s in st], "o-", label="beta-step (Gram) pass, s")
    ax.plot(n, [s["gradient_s"] for s in st], "o-", label="gradient pass, s")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("rows in the store")
    ax.set_ylabel("seconds")
    ax2 = ax.twinx()
    ax2.plot(n, [s["peak_rss_mib"] for s in st], "s:", color="gray", label="peak RSS, MiB")
    ax2.plot(n, [s["data_bytes"] / 2**20 for s in st], "x:", color="red", label="data, MiB")
    ax2.set_yscale("log")
    ax2.set_ylabel("MiB")
    lines = ax.get_legend_handles_labels()
    lines2 = ax2.get_legend_handles_labels()
    ax.legend(lines[0] + lines2[0], lines[1] + lines2[1], fontsize=8, loc="center right")
    ax.set_title(f"Streaming passes, p={STREAM_PROTOTYPES}, d={STREAM_FEATURES}")
    fig.tight_layout()
    fig.savefig(out_dir / "supersparse.png", dpi=110)
    plt.close(fig)

    if models is None:
        return
    model = models[10]
    pictures = pca.inverse_transform(model.prototypes_).reshape(-1, 28, 28)
    order = np.argsort(model.dual_coef_)
    fig, axes = plt.subplots(1, len(order), figsize=(1.6 * len(order), 2.1))
    for ax, k in zip(axes, order, strict=True):
        ax.imshow(pictures[k], cmap="gray_r")
        ax.set_title(f"beta={model.dual_coef_[k]:+.2f}", fontsize=8)
        ax.axis("off")
    fig.suptitle(f"SSVM virtual prototypes, p=10 (beta < 0: digit {DIGITS[0]}, "
                 f"beta > 0: digit {DIGITS[1]})", fontsize=9)
    fig.tight_layout()
    fig.savefig(out_dir / "supersparse_prototypes.png", dpi=110)
    plt.close(fig)


def report_tables(report: dict[str, Any]) -> dict[str, Any]:
    """Title, summary and tables for ``bench/REPORT.md``."""
    img, age, st = report["image"], report["age"], report["streaming"]
    classes = report.get("classes", [])
    image_rows = [[r["p"], r["ssvm_accuracy"], r["random_accuracy"], r["kmeans_accuracy"],
                   r["labels_accuracy"], r["ssvm_agreement_with_svm"], r["sv_ratio"],
                   r["ssvm_rows_per_s"], r["speedup_vs_svm"]] for r in img["rows"]]
    ok = [r["p"] for r in img["rows"] if r["p"] <= 10 and r["within_1pt_of_svm"]]
    beats = all(r["ssvm_accuracy"] >= max(r["random_accuracy"], r["kmeans_accuracy"])
                for r in img["rows"])
    largest = st[-1]
    return {
        "title": "Super-sparse machines: learned virtual prototypes",
        "summary": (
            f"MNIST {DIGITS[0]} vs {DIGITS[1]}: RBF-SVM {img['svm_accuracy']:.4f} with "
            f"{img['svm_support_vectors']} support vectors; SSVM within 1 point at p = "
            f"{ok if ok else 'none <= 10'}; SSVM beats random and k-means prototypes at every "
            f"p: {beats}. Adult age MAE: "
            + ", ".join(f"{r['method']} {r['mae']:.2f} ({r['prototypes']})"
                        for r in age["table"])
            + f". Streaming: Gram + gradient passes over {largest['n_rows']:,} rows in "
            f"{largest['gram_s'] + largest['gradient_s']:.0f} s with peak RSS "
            f"{largest['peak_rss_mib']:.0f} MiB (data {largest['data_bytes'] / 2**20:.0f} MiB)."
            + ("" if not classes else " Many classes, test accuracy of the default shared pool "
               "(prototypes) / one-vs-rest with 50 in total / RBF-SVM: " + ", ".join(
                   f"{r['dataset']} {r['shared']['accuracy']:.4f} "
                   f"({r['shared']['prototypes']}) / "
                   f"{r['ovr_same_total']['accuracy']:.4f} / {r['svm']['accuracy']:.4f}"
                   for r in classes) + ".")),
        "tables": [
            {"title": f"MNIST {DIGITS[0]} vs {DIGITS[1]}: test accuracy at p prototypes",
             "columns": ["p", "SSVM", "random", "k-means", "on labels", "agree w/ SVM",
                         "SVs / p", "SSVM rows/s", "x SVM rows/s"],
             "rows": image_rows,
             "notes": (f"RBF-SVM: accuracy {img['svm_accuracy']:.4f}, "
                       f"{img['svm_support_vectors']} SVs, {img['svm_rows_per_s']:.3g} rows/s "
                       "(scikit-learn decision_function). random / k-means: coefficients "
                       "fitted to the SVM's scores on fixed prototypes (random training rows; "
                       "the training row nearest each k-means centre).")},
            {"title": "Adult census, age regression: test MAE (prototypes used)",
             "columns": ["method", "MAE (years)", "prototypes", "fit s"],
             "rows": [[r["method"], r["mae"], r["prototypes"], r["fit_s"]]
                      for r in age["table"]],
             "notes": (f"{age['n_train']} train / {age['n_test']} test rows, "
                       f"{age['n_features']} features; predicting the mean: MAE "
                       f"{age['mean_predictor_mae']:.2f}. SRidge/SLASSO: p chosen by eq. 8 "
                       f"from {list(ADULT_P_GRID)} (tradeoff 0.01 years per prototype); "
                       "PSR/PSKM: random / k-means-nearest rows at the same p. Kernel "
                       f"Ridge/LASSO: {age['kernel_basis']} random training rows as prototypes, "
                       "same objective and solvers (fit s: the solve on the Gram matrix).")},
            {"title": "Streaming passes over a generated zarr store",
             "columns": ["rows", "data MiB", "Gram pass s", "gradient pass s",
                         "Gram Mrows/s", "gradient Mrows/s", "peak RSS MiB"],
             "rows": [[s["n_rows"], s["data_bytes"] / 2**20, s["gram_s"], s["gradient_s"],
                       s["gram_rows_per_s"] / 1e6, s["gradient_rows_per_s"] / 1e6,
                       s["peak_rss_mib"]] for s in st],
             "notes": (f"p = {STREAM_PROTOTYPES}, d = {STREAM_FEATURES}, chunks of "
                       f"{STREAM_CHUNK_ROWS} rows, LocalEngine; each size in a fresh process "
                       "(peak RSS = VmHWM, interpreter and numba included).")},
            *([{"title": "Many classes: test accuracy (prototypes per prediction, fit s)",
                "columns": ["method", *[f"{r['dataset']} ({r['n_classes']} classes)"
                                        for r in classes]],
                "rows": [[label, *[f"{r[key]['accuracy']:.4f} ({r[key]['prototypes']}, "
                                   f"{r[key]['fit_s']:.1f} s)" if key in r else "-"
                                   for r in classes]]
                         for key, label in CLASS_METHODS],
                "notes": ("SuperSparseClassifier() shares one pool of prototypes among the "
                          "classes (a coefficient vector per class); one-vs-rest trains a "
                          "binary super-sparse machine per class (scikit-learn's "
                          "OneVsRestClassifier). RBF-SVM: SVC(C=10, gamma='scale'), "
                          "prototypes = support vectors; its reduction: "
                          "SuperSparseClassifier.reduce at the SVM's gamma on the raw "
                          "features. Training rows: "
                          + ", ".join(f"{r['dataset']} {r['n_train']}" for r in classes)
                          + ".")}] if classes else []),
        ],
        "plots": ["supersparse.png", "supersparse_prototypes.png"],
    }


PARTS = ("image", "age", "streaming", "classes")


def run(mode: str, out_dir: Path, parts: tuple[str, ...] = PARTS) -> dict[str, Any]:
    """The ``parts`` (every part by default; the others are kept from the results file),
    JSON and PNGs."""
    cfg = SETTINGS[mode]
    root = data_dir()
    path = out_dir / "supersparse.json"
    report: dict[str, Any] = {}
    if set(parts) != set(PARTS):
        if not path.exists():
            raise SystemExit(f"{path} not found: run every part first")
        report = json.loads(path.read_text())
    t0 = time.perf_counter()
    measure = {"image": lambda: image_problem(root, cfg), "age": lambda: age_problem(root, cfg),
               "streaming": lambda: streaming(cfg), "classes": lambda: many_classes(cfg)}
    image: dict[str, Any] = {}
    measured_at = dict(report.get("measured_at", {}))
    for part in parts:
        result = measure[part]()
        if part == "image":
            image = result
            result = {k: v for k, v in result.items() if not k.startswith("_")}
        report[part] = result
        measured_at[part] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    report.update({
        "benchmark": "supersparse",
        "machine": machine_info(),
        "versions": library_versions(("numpy", "numba", "zarr", "scikit-learn", "streamlearn")),
        "settings": {"mode": mode, **{k: v for k, v in cfg.items()}, "seed": SEED,
                     "p_grid": list(P_GRID), "adult_p_grid": list(ADULT_P_GRID)},
        "measured_at": measured_at,
    })
    report["total_runtime_s"] = time.perf_counter() - t0
    report.update(report_tables(report))
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "supersparse.json").write_text(json.dumps(report, indent=2) + "\n")
    plot(report, image.get("_models"), image.get("_pca"), out_dir)
    print(report["summary"])
    print(f"total runtime {report['total_runtime_s']:.0f} s; results in "
          f"{out_dir}/supersparse.json")
    return report


def main(argv: list[str] | None = None) -> None:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller subsets and stores")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="results directory")
    parser.add_argument("--parts", default=",".join(PARTS),
                        help=f"comma-separated parts to measure, of {','.join(PARTS)}; the "
                             "others are kept from the results file")
    parser.add_argument("--measure-stream", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure_stream:
        print(json.dumps(measure_stream(args.measure_stream)))
        return
    parts = tuple(p.strip() for p in args.parts.split(",") if p.strip())
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        parser.error(f"unknown parts {unknown}; choose among {list(PARTS)}")
    run("quick" if args.quick else "full", args.out, parts)


if __name__ == "__main__":
    main()
