"""Out of the box: streamlearn's defaults and in-stream search against the peers users pick.

Every method runs in this process on the same rows, one after the other, with its library's
defaults (no setting is tuned per dataset here):

- streamlearn defaults: ``AdditiveSVC()``, ``MixtureSVC()``, ``ShareBoostClassifier()``;
- streamlearn with in-stream search: ``StreamSearchCV`` (its defaults) over
  ``AdditiveSVC`` with ``C`` in {0.1, 1, 10, 100} x ``n_bases`` in {10, 20}, and over
  ``MixtureSVC`` with ``C`` in {"auto", 0.1, 1} x ``n_components`` in {"auto", 10, 20}
- peers: ``LinearSVC`` after ``StandardScaler`` with ``C`` in {0.001, 0.01, 0.1, 1, 10}
  chosen by ``GridSearchCV(cv=3)``; ``SGDClassifier`` after ``StandardScaler``;
  ``HistGradientBoostingClassifier``; XGBoost (``tree_method="hist"``); LightGBM; an RBF
  ``SVC`` (``gamma="scale"``, after ``StandardScaler``) on at most 10,000 training rows (a
  seeded random subset); Vowpal Wabbit ``--oaa K`` and ``--oaa K --nn 40`` (one online
  pass, its default), through the ``vowpalwabbit`` Python package, else a ``vw`` binary on
  the path, else reported as not installed;
- the search itself, on the ``AdditiveSVC`` grid above: scikit-learn's ``GridSearchCV(cv=3)``
  and dask-ml's ``HyperbandSearchCV`` (on an in-process ``distributed`` client; the training
  rows cut into 5 blocks and ``max_iter`` 25 ``partial_fit`` calls, so the longest-trained
  candidate sees 5 passes, as ``GridSearchCV``'s fits see at least). dask-ml 2025.1 calls
  ``dask.persist`` inside the client's event loop, which dask 2025.3 and later refuse
  (dask/dask-ml#1016); this script replaces that call in dask-ml's module by the client's
  own ``persist`` for the duration of the fit.

Datasets, from ``$STREAMLEARN_DATA`` (default ``../shared/data`` next to the repository):
mnist, fashion_mnist, usps, letter (first 16,000 rows train, last 4,000 test), pendigits,
satimage, shuttle, ijcnn1, a9a and adult (the raw UCI files: numeric columns as they are,
categorical ones one-hot encoded with the training file's categories, ``?`` a category of
its own); ``mnist_oddeven`` (MNIST, labels mod 2); ``spirals``: two interleaved
Archimedean spirals ``r = theta``, ``theta`` in ``[0.5 pi, 5.5 pi]`` scaled to the unit disc,
Gaussian noise of standard deviation ``SPIRAL_NOISE`` on both coordinates, 2 x 2,000
training and 2 x 2,000 test points drawn from the same generator with different seeds.
Features are given to every method as stored (images flattened), as float32; labels are
coded 0..K-1. The training rows are shuffled once (seeded) before any method sees them:
several files are stored in class order (satimage in long runs of a class, ijcnn1 sorted by
class), which a one-pass online learner (Vowpal Wabbit) would otherwise see class by class.
Official test splits are used for scoring only. With ``--score-rest`` and a row cap, each method
is also scored on the training rows the cap left out (``rest_error_pct``): they are drawn
like the training rows, which a provided test split need not be.

Measured per (dataset, method): test error %, fit seconds (wall clock, one fit; numba
kernels are compiled or loaded by a warm-up first), prediction seconds, rows used, and the
passes over the training rows:

- streamlearn models and ``GridSearchCV`` over them: rows the fit cut into chunks from the
  data (every chunk a pass hands to a model, validation reads included), divided by the
  training rows (``rows_read``; the estimators' own ``n_passes_`` is recorded next to it);
- ``StreamSearchCV``: its ``n_passes_`` (reads of the data by the race, the held-out rows'
  single read and the refit). The rows cut into chunks are recorded too
  (``rows_cut_passes``): they also count the chunks a candidate's ``partial_fit`` cuts again
  from the in-memory slice it is handed (``MixtureSVC`` walks it several times), which are
  not reads of the data;
- ``GridSearchCV(AdditiveSVC)``: measured the same way; it is ``3 x 8`` fits on 2/3 of the
  rows plus the refit: with ``p`` passes per fit (the epochs, plus a describe and a
  calibration pass) ``3 x 8 x 2/3 x p + p = 17 p`` passes by formula;
- ``HyperbandSearchCV``: training rows handed to ``partial_fit``, divided by the training
  rows (the scoring of every candidate on dask-ml's held-out part is not counted);
- peers: what the library reports as its passes: SGD's and liblinear's ``n_iter_`` (epochs;
  for ``LinearSVC`` summed over the 15 cross-validation fits weighted by their share of the
  rows, plus the refit), boosting rounds plus one binning pass for the tree ensembles (each
  round reads every row's binned features), 1 for Vowpal Wabbit; none for the kernel SVM.

``--big-store GB`` (off by default) adds a second part: a zarr store of ``GB`` gigabytes of
synthetic rows (``streamlearn.data.synthetic.additive_problem``, 16 float32 features,
written in blocks), then, each in a fresh process, one bare pass (an engine reduce that only
counts rows; a second one is timed after it, since the first pays for the reader's start-up)
and one ``AdditiveSVC(epochs=1)`` fit, with wall time, passes and the peak RSS of that
process (``VmHWM``); the store is deleted afterwards.

Run ``python bench/out_of_the_box.py`` (every dataset and method on all rows: long, minutes
per cell on the MNIST-sized sets; narrow it with ``--datasets``, ``--models`` and
``--max-train-rows``) or ``--quick`` (usps, satimage and spirals unless ``--datasets`` says
otherwise, 2,000 training and 1,000 test rows each; under 10 minutes on 2 cores). Results go
to ``bench/results/out_of_the_box.json`` and ``out_of_the_box.png``.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import types
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
from machine_info import library_versions, machine_info, peak_rss_bytes

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
RESULTS_DIR = BENCH_DIR / "results"
DATA_DIR = BENCH_DIR / "data" / "out_of_the_box"
SEED = 0

REAL_DATASETS = ("mnist", "fashion_mnist", "usps", "letter", "pendigits", "satimage",
                 "shuttle", "ijcnn1", "a9a", "adult")
DATASETS = (*REAL_DATASETS, "mnist_oddeven", "spirals")
#: letter.npz has no split: the usual first 16,000 rows for training, the rest for testing.
LETTER_TRAIN_ROWS = 16_000
SPIRAL_POINTS = 2_000  # per class, in each of the training and test sets
SPIRAL_NOISE = 0.02
#: Datasets and row caps of ``--quick`` (when ``--datasets`` is not given).
QUICK_DATASETS = ("usps", "satimage", "spirals")
QUICK_TRAIN_ROWS = 2_000
QUICK_TEST_ROWS = 1_000
#: Training rows the RBF SVM is given at most (a seeded random subset).
RBF_MAX_ROWS = 10_000

ADDITIVE_GRID: dict[str, list[Any]] = {"C": [0.1, 1, 10, 100], "n_bases": [10, 20]}
#: Holds the defaults (``C="auto"``, ``n_components="auto"``): a search around them.
MIXTURE_GRID: dict[str, list[Any]] = {"C": ["auto", 0.1, 1],
                                      "n_components": ["auto", 10, 20]}
LINEAR_C_GRID = [0.001, 0.01, 0.1, 1.0, 10.0]
CV_FOLDS = 3
#: HyperbandSearchCV: training rows cut into this many blocks, one ``partial_fit`` call each.
HYPERBAND_BLOCKS = 5
#: Passes the longest-trained Hyperband candidate gets (``max_iter = blocks x epochs``).
HYPERBAND_EPOCHS = 5
VW_HIDDEN = 40

#: Model keys (``--models``) and their labels, in table order.
MODELS: dict[str, str] = {
    "additive": "AdditiveSVC()",
    "additive_ovo": "AdditiveSVC(multiclass='ovo')",
    "additive_ovr": "AdditiveSVC(multiclass='ovr')",
    "mixture": "MixtureSVC()",
    "shareboost": "ShareBoostClassifier()",
    "supersparse": "SuperSparseClassifier()",
    "supersparse_fixed_lam": "SuperSparseClassifier(lam=1e-3)",
    "supersparse_unweighted": "SuperSparseClassifier(weight_features=False)",
    "additive_search": "StreamSearchCV(AdditiveSVC)",
    "mixture_search": "StreamSearchCV(MixtureSVC)",
    "linearsvc": "LinearSVC, C by 3-fold CV",
    "sgd": "SGDClassifier",
    "hgb": "HistGradientBoosting",
    "xgboost": "XGBoost (hist)",
    "lightgbm": "LightGBM",
    "rbf_svc": "SVC (RBF)",
    "vw_oaa": "VW --oaa",
    "vw_nn": f"VW --oaa --nn {VW_HIDDEN}",
    "gridsearch_additive": "GridSearchCV(AdditiveSVC)",
    "hyperband_additive": "HyperbandSearchCV(AdditiveSVC)",
}
STREAMLEARN_MODELS = ("additive", "additive_ovo", "additive_ovr", "mixture", "shareboost",
                      "supersparse", "supersparse_fixed_lam", "supersparse_unweighted",
                      "additive_search", "mixture_search", "gridsearch_additive")
PEER_LIBRARIES = ("scikit-learn", "scipy", "xgboost", "lightgbm", "vowpalwabbit", "dask",
                  "distributed", "dask-ml", "matplotlib", "psutil")


# -- rows read from the stream ------------------------------------------------------------
class RowCounter:
    """Rows every ``Dataset`` hands out as chunks in this process, while installed."""

    def __init__(self) -> None:
        self.rows = 0
        self._lock = threading.Lock()
        self._installed = False

    def install(self) -> None:
        """Wrap ``Dataset._chunk`` (every chunk of every pass is cut there) to count rows."""
        if self._installed:
            return
        from streamlearn.data.dataset import Dataset

        original = Dataset._chunk
        counter = self

        def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
            chunk = original(self, *args, **kwargs)
            with counter._lock:
                counter.rows += int(chunk.n_rows)
            return chunk

        Dataset._chunk = counted  # type: ignore[method-assign]
        self._installed = True

    @contextlib.contextmanager
    def measure(self) -> Iterator[dict[str, int]]:
        """Rows read inside the block, in the yielded dict's ``rows``."""
        out = {"rows": 0}
        start = self.rows
        try:
            yield out
        finally:
            out["rows"] = self.rows - start


ROWS = RowCounter()


@contextlib.contextmanager
def engine_log() -> Iterator[Any]:
    """The engines' pass log (``streamlearn.engine.accounting.recording``), or None where
    this version of streamlearn keeps none."""
    try:
        from streamlearn.engine.accounting import recording
    except ImportError:
        yield None
        return
    with recording() as log:
        yield log


# -- data ---------------------------------------------------------------------------------
def data_dir() -> Path:
    """``$STREAMLEARN_DATA``, else ``../shared/data`` next to the repository."""
    return Path(os.environ.get("STREAMLEARN_DATA") or REPO_DIR.parent / "shared" / "data")


def spirals(n_per_class: int, noise: float = SPIRAL_NOISE,
            seed: int = SEED) -> tuple[np.ndarray, np.ndarray]:
    """Two interleaved Archimedean spirals with Gaussian noise, points uniform along the arm.

    Parameters
    ----------
    n_per_class : int
        Points on each arm.
    noise : float
        Standard deviation of the noise added to both coordinates (the unit disc's scale).
    seed : int
        Seeds the draw; different seeds give independent samples of the same distribution.

    Returns
    -------
    X : ndarray of shape (2 n_per_class, 2), float32
    y : ndarray of shape (2 n_per_class,), int64 in {0, 1}
    """
    rng = np.random.default_rng(seed)
    lo, hi = 0.5 * np.pi, 5.5 * np.pi
    X = np.empty((2 * n_per_class, 2))
    for k, sign in enumerate((1.0, -1.0)):
        theta = np.sqrt(rng.uniform(lo**2, hi**2, size=n_per_class))  # uniform in arc length
        arm = sign * np.c_[theta * np.cos(theta), theta * np.sin(theta)] / hi
        X[k * n_per_class:(k + 1) * n_per_class] = arm + noise * rng.standard_normal(arm.shape)
    y = np.repeat([1, 0], n_per_class)
    order = rng.permutation(len(y))
    return np.ascontiguousarray(X[order], dtype=np.float32), y[order].astype(np.int64)


def _adult_table(path: Path) -> tuple[Any, np.ndarray]:
    import pandas as pd

    names = ["age", "workclass", "fnlwgt", "education", "education_num", "marital_status",
             "occupation", "relationship", "race", "sex", "capital_gain", "capital_loss",
             "hours_per_week", "native_country", "income"]
    with gzip.open(path, "rt") as f:
        frame = pd.read_csv(f, header=None, names=names, skipinitialspace=True,
                            comment="|", skip_blank_lines=True)
    frame = frame.dropna(subset=["income"])
    y = frame.pop("income").str.rstrip(".").eq(">50K").to_numpy().astype(np.int64)
    return frame, y


def load_adult(root: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Raw UCI adult: numeric columns as they are, categorical ones one-hot encoded by the
    training file's categories (``?`` is a category)."""
    import pandas as pd

    train, y = _adult_table(root / "adult.data.gz")
    test, yt = _adult_table(root / "adult.test.gz")
    categorical = [c for c in train.columns if not pd.api.types.is_numeric_dtype(train[c])]
    X = pd.get_dummies(train, columns=categorical, dtype=np.float32)
    Xt = pd.get_dummies(test, columns=categorical, dtype=np.float32).reindex(
        columns=X.columns, fill_value=0.0)
    return X.to_numpy(np.float32), y, Xt.to_numpy(np.float32), yt


def load(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Train and test rows of a dataset: float32 features (images flattened), int labels."""
    if name == "spirals":
        X, y = spirals(SPIRAL_POINTS, seed=SEED)
        Xt, yt = spirals(SPIRAL_POINTS, seed=SEED + 1)
        return X, y, Xt, yt
    root = data_dir()
    if name == "adult":
        return load_adult(root)
    file = root / f"{('mnist' if name == 'mnist_oddeven' else name)}.npz"
    if not file.exists():
        sys.exit(f"{file} not found: set STREAMLEARN_DATA to the directory holding "
                 f"{file.name}")
    with np.load(file) as f:
        if name == "letter":
            X, y = f["X"], f["y"]
            X, Xt, y, yt = X[:LETTER_TRAIN_ROWS], X[LETTER_TRAIN_ROWS:], \
                y[:LETTER_TRAIN_ROWS], y[LETTER_TRAIN_ROWS:]
        else:
            X, y, Xt, yt = (f[k] for k in ("X_train", "y_train", "X_test", "y_test"))
    if name == "mnist_oddeven":
        y, yt = y % 2, yt % 2
    X = np.ascontiguousarray(X.reshape(len(X), -1), dtype=np.float32)
    Xt = np.ascontiguousarray(Xt.reshape(len(Xt), -1), dtype=np.float32)
    return X, np.asarray(y).astype(np.int64), Xt, np.asarray(yt).astype(np.int64)


def subsample(X: np.ndarray, y: np.ndarray, n: int | None, seed: int,
              shuffle: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """A seeded random subset of ``n`` rows (all rows when ``n`` is None or more), in a
    seeded random order with ``shuffle``, else in the file's order."""
    if (n is None or n >= len(y)) and not shuffle:
        return X, y
    pick = np.random.default_rng(seed).permutation(len(y))[:n]
    if not shuffle:
        pick = np.sort(pick)
    return np.ascontiguousarray(X[pick]), y[pick]


def rest_of_subsample(X: np.ndarray, y: np.ndarray, n: int | None, seed: int
                      ) -> tuple[np.ndarray, np.ndarray]:
    """The training rows :func:`subsample` leaves out with the same ``n`` and ``seed``, in
    the file's order (none when it keeps them all)."""
    if n is None or n >= len(y):
        return X[:0], y[:0]
    rest = np.sort(np.random.default_rng(seed).permutation(len(y))[n:])
    return np.ascontiguousarray(X[rest]), y[rest]


def encode_labels(y: np.ndarray, yt: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Labels coded 0..K-1 by the training labels (test labels unseen in training: -1)."""
    classes = np.unique(y)
    code = np.searchsorted(classes, yt)
    code[(code >= len(classes)) | (classes[np.minimum(code, len(classes) - 1)] != yt)] = -1
    return np.searchsorted(classes, y).astype(np.int64), code.astype(np.int64), len(classes)


# -- methods ------------------------------------------------------------------------------
def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


class NotAvailable(Exception):
    """A method whose library is not installed here."""


def streamlearn_model(key: str) -> Any:
    from streamlearn.models import (
        AdditiveSVC,
        MixtureSVC,
        ShareBoostClassifier,
        SuperSparseClassifier,
    )

    if key == "supersparse":
        return SuperSparseClassifier(progress=False)
    if key == "supersparse_fixed_lam":  # the default before lam="auto"
        return SuperSparseClassifier(lam=1e-3, progress=False)
    if key == "supersparse_unweighted":  # the default before weight_features
        return SuperSparseClassifier(weight_features=False, progress=False)
    if key == "additive":
        return AdditiveSVC(progress=False)
    if key == "additive_ovo":
        return AdditiveSVC(multiclass="ovo", progress=False)
    if key == "additive_ovr":  # the default before multiclass="auto"
        return AdditiveSVC(multiclass="ovr", progress=False)
    if key == "mixture":
        return MixtureSVC(progress=False)
    if key == "shareboost":
        return ShareBoostClassifier(progress=False)
    raise ValueError(key)


def stream_search(key: str) -> Any:
    try:
        from streamlearn.models.search import StreamSearchCV
    except ImportError as exc:
        raise NotAvailable(f"not available: {exc}") from exc
    from streamlearn.models import AdditiveSVC, MixtureSVC

    if key == "additive_search":
        return StreamSearchCV(AdditiveSVC(progress=False), ADDITIVE_GRID)
    return StreamSearchCV(MixtureSVC(progress=False), MIXTURE_GRID)


#: (rows, n_iter_) of every liblinear fit inside the LinearSVC grid search.
_LIBLINEAR_FITS: list[tuple[int, int]] = []


def _counted_linear_svc() -> Any:
    from sklearn.svm import LinearSVC

    class CountedLinearSVC(LinearSVC):
        """``LinearSVC`` that records its rows and iterations (passes) per fit."""

        def fit(self, X: Any, y: Any, sample_weight: Any = None) -> Any:
            super().fit(X, y, sample_weight=sample_weight)
            _LIBLINEAR_FITS.append((len(y), int(np.max(self.n_iter_))))
            return self

    return CountedLinearSVC()


def vw_command() -> str | None:
    """``"python"`` when the ``vowpalwabbit`` package imports, else the ``vw`` binary."""
    try:
        from vowpalwabbit import pyvw  # noqa: F401

        return "python"
    except ImportError:
        return shutil.which("vw")


def vw_lines(X: np.ndarray, y: np.ndarray | None) -> list[str]:
    """Rows in VW's text format: ``label | j:v ...`` (non-zero features, labels 1..K)."""
    lines = []
    for i in range(len(X)):
        nz = np.flatnonzero(X[i])
        feats = " ".join(f"{j}:{v:.6g}" for j, v in zip(nz, X[i, nz], strict=True))
        lines.append(f"{'' if y is None else int(y[i]) + 1} | {feats}")
    return lines


class VWModel:
    """Vowpal Wabbit one-against-all (optionally with a hidden layer), one online pass."""

    def __init__(self, n_classes: int, hidden: int | None) -> None:
        self.args = f"--oaa {n_classes} --quiet" + (f" --nn {hidden}" if hidden else "")
        self.format_s = 0.0

    def fit(self, X: np.ndarray, y: np.ndarray) -> VWModel:
        lines, self.format_s = timed(lambda: vw_lines(X, y))
        how = vw_command()
        if how is None:
            raise NotAvailable("not installed (no vowpalwabbit package, no vw binary)")
        self.how = how
        if how == "python":
            from vowpalwabbit import pyvw

            self.ws = pyvw.Workspace(self.args)
            for line in lines:
                self.ws.learn(line)
        else:
            self.dir = tempfile.mkdtemp(prefix="vw-")
            data = Path(self.dir) / "train.vw"
            data.write_text("\n".join(lines) + "\n")
            subprocess.run([how, *self.args.split(), "-d", str(data), "-f",
                            str(Path(self.dir) / "model.vw")], check=True)
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        lines = vw_lines(X, None)
        if self.how == "python":
            return np.array([int(self.ws.predict(line)) - 1 for line in lines])
        data, preds = Path(self.dir) / "test.vw", Path(self.dir) / "pred.txt"
        data.write_text("\n".join(lines) + "\n")
        subprocess.run([self.how, "--quiet", "-t", "-i", str(Path(self.dir) / "model.vw"),
                        "-d", str(data), "-p", str(preds)], check=True)
        out = np.array([int(float(v)) - 1 for v in preds.read_text().split()])
        shutil.rmtree(self.dir, ignore_errors=True)
        return out


def peer_model(key: str, n_classes: int) -> Any:
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import SGDClassifier
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    if key == "linearsvc":
        pipe = make_pipeline(StandardScaler(), _counted_linear_svc())
        return GridSearchCV(pipe, {"countedlinearsvc__C": LINEAR_C_GRID}, cv=CV_FOLDS)
    if key == "sgd":
        return make_pipeline(StandardScaler(), SGDClassifier(random_state=SEED))
    if key == "hgb":
        return HistGradientBoostingClassifier(random_state=SEED)
    if key == "xgboost":
        try:
            from xgboost import XGBClassifier
        except ImportError as exc:
            raise NotAvailable(f"not installed: {exc}") from exc
        return XGBClassifier(tree_method="hist", random_state=SEED)
    if key == "lightgbm":
        try:
            from lightgbm import LGBMClassifier
        except ImportError as exc:
            raise NotAvailable(f"not installed: {exc}") from exc
        return LGBMClassifier(random_state=SEED, verbose=-1)
    if key == "rbf_svc":
        return make_pipeline(StandardScaler(), SVC(kernel="rbf", gamma="scale"))
    if key in ("vw_oaa", "vw_nn"):
        return VWModel(n_classes, VW_HIDDEN if key == "vw_nn" else None)
    raise ValueError(key)


def peer_passes(key: str, model: Any, n_train: int) -> tuple[float | None, str]:
    """Passes a peer made over its training rows, as the library reports them."""
    if key == "linearsvc":
        total = sum(rows * it for rows, it in _LIBLINEAR_FITS) / n_train
        return total, (f"liblinear iterations of {len(_LIBLINEAR_FITS)} fits (15 CV + refit) "
                       "weighted by their rows")
    if key == "sgd":
        return float(model[-1].n_iter_), "SGD epochs (n_iter_)"
    if key == "hgb":
        return float(model.n_iter_) + 1, "boosting rounds (n_iter_) + binning pass"
    if key == "xgboost":
        return float(model.get_booster().num_boosted_rounds()) + 1, "boosting rounds + binning"
    if key == "lightgbm":
        return float(model.booster_.current_iteration()) + 1, "boosting rounds + binning"
    if key in ("vw_oaa", "vw_nn"):
        return 1.0, "one online pass (VW default)"
    return None, "kernel SVM: no pass count"


@contextlib.contextmanager
def dask_ml_persist_fix() -> Iterator[None]:
    """Let dask-ml's incremental search persist through the running client (dask-ml#1016)."""
    import dask
    import dask_ml.model_selection._incremental as incremental
    from distributed import default_client

    def persist(*args: Any) -> tuple[Any, ...]:
        client = default_client()
        out: list[Any] = []
        for a in args:
            if isinstance(a, dict):
                keys = list(a)
                values = client.persist([a[k] for k in keys]) if keys else []
                out.append(dict(zip(keys, values, strict=True)))
            else:
                out.append(client.persist(a))
        return tuple(out)

    shim = types.SimpleNamespace(**{k: getattr(dask, k) for k in dir(dask)
                                    if not k.startswith("__")})
    shim.persist = persist
    saved = incremental.dask
    incremental.dask = shim
    try:
        yield
    finally:
        incremental.dask = saved


def import_distributed() -> None:
    """Import the ``distributed`` package, not ``bench/distributed.py`` (this script's folder
    is first on ``sys.path`` and holds a benchmark of that name)."""
    module = sys.modules.get("distributed")
    if module is not None and Path(module.__file__ or "").resolve().parent != BENCH_DIR:
        return
    sys.modules.pop("distributed", None)
    saved = sys.path[:]
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != BENCH_DIR]
    try:
        import distributed  # noqa: F401
    finally:
        sys.path[:] = saved


#: Rows handed to ``AdditiveSVC.partial_fit`` while counting (Hyperband).
_PARTIAL_ROWS = [0]


def hyperband_fit(X: np.ndarray, y: np.ndarray, n_classes: int) -> tuple[Any, dict[str, Any]]:
    """``HyperbandSearchCV`` over the AdditiveSVC grid on an in-process dask client."""
    try:
        import_distributed()
        import dask.array as da
        from dask_ml.model_selection import HyperbandSearchCV
        from distributed import Client
    except ImportError as exc:
        raise NotAvailable(f"not installed: {exc}") from exc
    from streamlearn.models import AdditiveSVC

    original = AdditiveSVC.partial_fit

    def counted(self: Any, X: Any, y: Any, *args: Any, **kwargs: Any) -> Any:
        _PARTIAL_ROWS[0] += len(y)
        return original(self, X, y, *args, **kwargs)

    block = math.ceil(len(y) / HYPERBAND_BLOCKS)
    max_iter = HYPERBAND_BLOCKS * HYPERBAND_EPOCHS
    search = HyperbandSearchCV(AdditiveSVC(progress=False), ADDITIVE_GRID, max_iter=max_iter,
                               random_state=SEED)
    _PARTIAL_ROWS[0] = 0
    AdditiveSVC.partial_fit = counted  # type: ignore[method-assign]
    try:
        with Client(processes=False, n_workers=1, threads_per_worker=1,
                    dashboard_address=None), dask_ml_persist_fix(), warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            Xd = da.from_array(X, chunks=(block, -1))
            yd = da.from_array(y, chunks=block)
            t0 = time.perf_counter()
            search.fit(Xd, yd, classes=np.arange(n_classes))
            fit_s = time.perf_counter() - t0
    finally:
        AdditiveSVC.partial_fit = original  # type: ignore[method-assign]
    info = {"fit_s": fit_s, "passes": _PARTIAL_ROWS[0] / len(y),
            "passes_how": "rows given to partial_fit / training rows (scoring not counted)",
            "best_params": search.best_params_,
            "partial_fit_calls": int(search.metadata_["partial_fit_calls"]),
            "n_models": int(search.metadata_["n_models"]), "max_iter": max_iter,
            "block_rows": block}
    return search.best_estimator_, info


def run_cell(key: str, X: np.ndarray, y: np.ndarray, Xt: np.ndarray, yt: np.ndarray,
             n_classes: int, rest: tuple[np.ndarray, np.ndarray] | None = None
             ) -> dict[str, Any]:
    """Fit one method, score it on the test rows (and on ``rest``, training rows the fit did
    not see, when given); failures become the record's ``error``."""
    from sklearn.exceptions import ConvergenceWarning

    row: dict[str, Any] = {"model": key, "label": MODELS[key], "n_train": len(y),
                           "n_test": len(yt), "load_average_1m": round(os.getloadavg()[0], 2)}
    try:
        if key == "rbf_svc" and len(y) > RBF_MAX_ROWS:
            X, y = subsample(X, y, RBF_MAX_ROWS, SEED + 2)
            row["n_train"], row["row_cap"] = len(y), RBF_MAX_ROWS
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            if key == "hyperband_additive":
                model, info = hyperband_fit(X, y, n_classes)
                row.update(info)
            elif key in STREAMLEARN_MODELS:
                if key == "gridsearch_additive":
                    from sklearn.model_selection import GridSearchCV

                    from streamlearn.models import AdditiveSVC

                    model = GridSearchCV(AdditiveSVC(progress=False), ADDITIVE_GRID,
                                         cv=CV_FOLDS)
                elif key.endswith("_search"):
                    model = stream_search(key)
                else:
                    model = streamlearn_model(key)
                with ROWS.measure() as read, engine_log() as log:
                    _, row["fit_s"] = timed(lambda: model.fit(X, y))
                row["rows_read"] = read["rows"]
                if log is not None:  # the engines' own account, where they keep one
                    row["engine_passes"] = getattr(log, "passes", None)
                    row["engine_rows_read"] = getattr(log, "rows_read", None)
                row["passes"] = read["rows"] / len(y)
                row["passes_how"] = "rows read from the stream / training rows"
                if hasattr(model, "n_passes_"):
                    row["n_passes_"] = float(model.n_passes_)
                    if key.endswith("_search"):
                        # The race hands each candidate's partial_fit in-memory slices, which
                        # it may walk again as chunks: those rows are cut, not read.
                        row["rows_cut_passes"] = row["passes"]
                        row["passes"] = row["n_passes_"]
                        row["passes_how"] = "StreamSearchCV.n_passes_"
                if hasattr(model, "best_params_"):
                    row["best_params"] = model.best_params_
                if hasattr(model, "multiclass_"):  # the scheme "auto" chose, and why
                    row["multiclass_"] = model.multiclass_
                    row["multiclass_check_"] = getattr(model, "multiclass_check_", None)
                if hasattr(model, "tau_check_"):  # the gating factor tau="auto" kept, and why
                    row["tau_check_"] = model.tau_check_
                for attr in ("search_time_", "refit_time_"):  # StreamSearchCV's split
                    if hasattr(model, attr):
                        row[attr.replace("_time_", "_s")] = float(getattr(model, attr))
                if key == "gridsearch_additive":
                    row["passes_formula"] = ("3 folds x 8 settings x 2/3 of the rows x p + p "
                                             "= 17 p, p the passes of one fit")
            else:
                model = peer_model(key, n_classes)
                _LIBLINEAR_FITS.clear()
                _, row["fit_s"] = timed(lambda: model.fit(X, y))
                row["passes"], row["passes_how"] = peer_passes(key, model, len(y))
                if hasattr(model, "best_params_"):
                    row["best_params"] = model.best_params_
                if isinstance(model, VWModel):
                    row["format_s"], row["vw_via"] = model.format_s, model.how
        row["convergence_warnings"] = sum(issubclass(w.category, ConvergenceWarning)
                                          for w in caught)
        predicted, row["predict_s"] = timed(lambda: np.asarray(model.predict(Xt)))
        row["test_error_pct"] = 100.0 * float(np.mean(predicted.astype(np.int64) != yt))
        if rest is not None and len(rest[1]) > 0:
            rest_predicted = np.asarray(model.predict(rest[0])).astype(np.int64)
            row["rest_error_pct"] = 100.0 * float(np.mean(rest_predicted != rest[1]))
            row["n_rest"] = len(rest[1])
    except NotAvailable as exc:
        row["error"] = str(exc)
    except Exception as exc:  # one failing cell must not stop the run
        row["error"] = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
        row["traceback"] = traceback.format_exc(limit=6)
    return row


def warm_up() -> None:
    """Compile (or load from numba's cache) the kernels of every streamlearn model's fit and
    prediction: each model with its defaults on 300 rows, two and three classes, and on
    20,000 generated rows of 48 features, where the fits call the kernels that small data
    replaces by numpy (moments, the B-spline transform, pair screening)."""
    X, y = spirals(150)
    y3 = (np.arange(len(y)) % 3).astype(np.int64)
    rng = np.random.default_rng(SEED)
    wide = rng.normal(size=(20_000, 48)).astype(np.float32)
    signal = np.sin(2 * wide[:, 0]) + wide[:, 1] * wide[:, 2] - wide[:, 3]
    problems = [(X, y), (X, y3), (wide, (signal > 0).astype(np.int64)),
                (wide, np.digitize(signal, [-0.5, 0.8]).astype(np.int64))]
    for key in ("additive", "mixture", "shareboost", "supersparse"):
        for features, labels in problems:
            with contextlib.suppress(Exception), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                streamlearn_model(key).fit(features, labels).predict(features)


def run_dataset(name: str, models: list[str], max_train: int | None, quick: bool,
                log: Callable[[str], None], score_rest: bool = False
                ) -> list[dict[str, Any]]:
    X, y, Xt, yt = load(name)
    n_all, n_test_all = len(y), len(yt)
    cap = QUICK_TRAIN_ROWS if quick else max_train
    if quick and max_train is not None:
        cap = min(cap, max_train)
    rest = rest_of_subsample(X, y, cap, SEED) if score_rest else None
    X, y = subsample(X, y, cap, SEED, shuffle=True)
    if quick:
        Xt, yt = subsample(Xt, yt, QUICK_TEST_ROWS, SEED + 1)
    y_train = y
    y, yt, n_classes = encode_labels(y, yt)
    if rest is not None:
        rest = (rest[0], encode_labels(y_train, rest[1])[1])
    rows = []
    for key in models:
        row = run_cell(key, X, y, Xt, yt, n_classes, rest)
        row.update({"dataset": name, "n_features": int(X.shape[1]), "n_classes": n_classes,
                    "n_train_available": n_all, "n_test_available": n_test_all})
        if "error" in row:
            log(f"{name:14s} {MODELS[key]:32s} {row['error']}")
        else:
            passes = "-" if row.get("passes") is None else f"{row['passes']:.1f}"
            on_rest = (f" rest err={row['rest_error_pct']:6.2f}%" if "rest_error_pct" in row
                       else "")
            log(f"{name:14s} {MODELS[key]:32s} n={row['n_train']:>6,d} "
                f"err={row['test_error_pct']:6.2f}%{on_rest} fit={row['fit_s']:8.2f}s "
                f"passes={passes}")
        rows.append(row)
    return rows


# -- the big store ------------------------------------------------------------------------
BIG_FEATURES = 16
BIG_CHUNK_ROWS = 1 << 16
BIG_BLOCK_ROWS = 1 << 20


def write_big_store(path: Path, size_gb: float) -> dict[str, Any]:
    """A zarr v3 store of ``size_gb`` GB of float32 features (X) and int8 labels (y)."""
    import zarr

    from streamlearn.data.synthetic import additive_problem

    n = int(size_gb * 1e9 // (4 * BIG_FEATURES + 1))
    group = zarr.open_group(path, mode="w", zarr_format=3)
    Xa = group.create_array("X", shape=(n, BIG_FEATURES), chunks=(BIG_CHUNK_ROWS, BIG_FEATURES),
                            dtype="float32")
    ya = group.create_array("y", shape=(n,), chunks=(BIG_CHUNK_ROWS,), dtype="int8")
    t0 = time.perf_counter()
    for a in range(0, n, BIG_BLOCK_ROWS):
        b = min(a + BIG_BLOCK_ROWS, n)
        Xb, yb = additive_problem(b - a, BIG_FEATURES, seed=SEED, start=a)
        Xa[a:b] = Xb
        ya[a:b] = yb
    disk = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    return {"rows": n, "n_features": BIG_FEATURES, "raw_bytes": n * (4 * BIG_FEATURES + 1),
            "disk_bytes": disk, "write_s": time.perf_counter() - t0,
            "zarr_chunk_rows": BIG_CHUNK_ROWS}


def big_child(what: str, path: str) -> None:
    """One bare pass or one ``AdditiveSVC(epochs=1)`` fit over the store; prints JSON."""
    import operator

    from streamlearn.data import open_dataset
    from streamlearn.engine.local import LocalEngine
    from streamlearn.models import AdditiveSVC

    ROWS.install()
    ds = open_dataset(path, task="classification")
    with ROWS.measure() as read:
        t0 = time.perf_counter()
        if what == "bare":
            rows = LocalEngine(progress=False).reduce(
                ds, start=lambda: 0, step=lambda s, c: s + c.n_rows, merge=operator.add)
            extra: dict[str, Any] = {"rows_counted": int(rows)}
        else:
            model = AdditiveSVC(epochs=1, progress=False).fit(ds)
            extra = {"n_passes_": getattr(model, "n_passes_", None),
                     "n_iter_": int(model.n_iter_)}
        seconds = time.perf_counter() - t0
    if what == "bare":  # a second pass, outside the counts: the first pays for start-up
        t1 = time.perf_counter()
        LocalEngine(progress=False).reduce(
            ds, start=lambda: 0, step=lambda s, c: s + c.n_rows, merge=operator.add)
        extra["second_pass_s"] = time.perf_counter() - t1
    peak = peak_rss_bytes()
    print(json.dumps({"what": what, "wall_s": seconds, "rows": ds.n_rows,
                      "passes": read["rows"] / ds.n_rows, "peak_rss_bytes": peak,
                      "rows_per_s": read["rows"] / seconds, **extra}))


def run_big_store(size_gb: float, log: Callable[[str], None]) -> dict[str, Any]:
    """Write the store, time a bare pass and a one-epoch fit in fresh processes, delete it."""
    path = DATA_DIR / f"big_{size_gb:g}GB.zarr"
    shutil.rmtree(path, ignore_errors=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    out: dict[str, Any] = {"size_gb": size_gb, "path": str(path)}
    try:
        out["store"] = write_big_store(path, size_gb)
        log(f"big store: {out['store']['rows']:,d} rows, "
            f"{out['store']['disk_bytes'] / 1e9:.2f} GB on disk, "
            f"written in {out['store']['write_s']:.0f} s")
        for what in ("bare", "fit"):
            t0 = time.perf_counter()
            done = subprocess.run([sys.executable, __file__, "--big-child", what, str(path)],
                                  capture_output=True, text=True, check=False,
                                  env={**os.environ, "STREAMLEARN_PROGRESS": "0"})
            if done.returncode != 0:
                out[what] = {"error": done.stderr.strip().splitlines()[-1:]}
                log(f"big store {what}: failed: {out[what]['error']}")
                continue
            out[what] = json.loads(done.stdout.strip().splitlines()[-1])
            out[what]["process_wall_s"] = time.perf_counter() - t0
            log(f"big store {what}: {out[what]['wall_s']:.1f} s, "
                f"{out[what]['passes']:.2f} passes, peak RSS "
                f"{out[what]['peak_rss_bytes'] / 2**20:.0f} MiB")
    finally:
        shutil.rmtree(path, ignore_errors=True)
        out["deleted"] = not path.exists()
    return out


# -- report -------------------------------------------------------------------------------
def _cell(row: dict[str, Any]) -> str:
    if "error" in row:
        return "n/a" if row["error"].startswith("not ") else "failed"
    return f"{row['test_error_pct']:.2f}"


def _num(value: Any, digits: int) -> Any:
    return None if value is None else round(float(value), digits)


def report_tables(report: dict[str, Any]) -> dict[str, Any]:
    """Title, summary and tables of a result for ``bench/REPORT.md`` (see bench/README.md)."""
    rows = report["results"]
    datasets = list(dict.fromkeys(r["dataset"] for r in rows))
    models = list(dict.fromkeys(r["model"] for r in rows))
    by = {(r["dataset"], r["model"]): r for r in rows}
    pivot = [[MODELS[m], *(_cell(by[d, m]) if (d, m) in by else None for d in datasets)]
             for m in models]
    long = [[r["dataset"], r["label"], r["n_train"], r["n_test"],
             _num(r.get("test_error_pct"), 2), _num(r.get("fit_s"), 2),
             _num(r.get("passes"), 1),
             json.dumps(r["best_params"]) if "best_params" in r else
             (r.get("error") or "")] for r in rows]
    tables = [
        {"title": "Test error % (rows: methods, columns: datasets)",
         "columns": ["method", *datasets], "rows": pivot,
         "notes": "n/a: library not installed or not available; failed: see the long table."},
        {"title": "Every cell: rows used, test error, fit time, passes over the training rows",
         "columns": ["dataset", "method", "train rows", "test rows", "error %", "fit s",
                     "passes", "chosen setting / error"],
         "rows": long,
         "notes": "passes: streamlearn rows read from the stream / training rows; peers as "
                  "their library reports them (see the script's docstring)."},
    ]
    race = [d for d in datasets if (d, "additive_search") in by and (d, "gridsearch_additive")
            in by and "refit_s" in by[d, "additive_search"]]
    if race:
        tables.append(search_table(race, by))
    big = report.get("big_store")
    if big:
        tables.append({
            "title": f"Big zarr store ({big['size_gb']:g} GB): a bare pass and one epoch",
            "columns": ["run", "rows", "wall s", "passes", "rows/s", "peak RSS MiB",
                        "bare pass again, s"],
            "rows": [[w, big[w].get("rows"), _num(big[w].get("wall_s"), 1),
                      _num(big[w].get("passes"), 2), _num(big[w].get("rows_per_s"), 0),
                      _num((big[w].get("peak_rss_bytes") or 0) / 2**20, 0),
                      _num(big[w].get("second_pass_s"), 1)]
                     for w in ("bare", "fit") if w in big and "error" not in big[w]],
            "notes": f"{big.get('store', {}).get('rows', 0):,d} rows of {BIG_FEATURES} float32 "
                     "features and an int8 label; each run in a fresh process, peak RSS its "
                     "VmHWM; rows/s counts every row read (the fit's describe and calibration "
                     "passes included).",
        })
    failed = sum("error" in r and not r["error"].startswith("not ") for r in rows)
    return {
        "title": "Out of the box: defaults and in-stream search against the usual peers",
        "summary": (f"{len(models)} methods on {len(datasets)} datasets with library defaults"
                    f"{' (quick: small subsamples)' if report.get('quick') else ''}: test "
                    f"error, fit time and passes over the data; {failed} cells failed."),
        "tables": tables,
        "plots": ["out_of_the_box.png"],
    }


def search_table(datasets: list[str], by: dict[tuple[str, str], dict[str, Any]]
                 ) -> dict[str, Any]:
    """``StreamSearchCV(AdditiveSVC)`` against ``GridSearchCV(AdditiveSVC)`` on the same grid:
    test error, passes, and the search's wall time over its refit's (one fit at the chosen
    setting)."""
    rows = []
    for d in datasets:
        s, g = by[d, "additive_search"], by[d, "gridsearch_additive"]
        rows.append([d, json.dumps(s.get("best_params")), _num(s.get("test_error_pct"), 2),
                     json.dumps(g.get("best_params")), _num(g.get("test_error_pct"), 2),
                     _num(s["test_error_pct"] - g["test_error_pct"], 2),
                     _num(g["passes"] / s["passes"], 1),
                     _num(s["fit_s"] / s["refit_s"], 2)])
    return {"title": "In-stream search against GridSearchCV(cv=3) on the AdditiveSVC grid",
            "columns": ["dataset", "StreamSearchCV choice", "error %", "GridSearchCV choice",
                        "error %", "difference (points)", "passes, GridSearchCV / ours",
                        "our wall time / one fit at the choice"],
            "rows": rows,
            "notes": "Targets: difference <= 0.2 points, >= 5x fewer passes, <= 2x the wall "
                     "time of one fit at the chosen setting (the search's refit, timed inside "
                     "it)."}


def markdown(table: dict[str, Any]) -> str:
    def fmt(v: Any) -> str:
        return "-" if v is None else str(v)

    lines = ["| " + " | ".join(table["columns"]) + " |",
             "|" + "---|" * len(table["columns"])]
    lines += ["| " + " | ".join(fmt(v) for v in row) + " |" for row in table["rows"]]
    return "\n".join(lines)


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    """Test error per dataset, one panel each, methods side by side."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    datasets = list(dict.fromkeys(r["dataset"] for r in rows))
    models = list(dict.fromkeys(r["model"] for r in rows))
    cols = min(4, len(datasets))
    nrows = math.ceil(len(datasets) / cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(4.5 * cols, 0.28 * len(models) * nrows + 1.5),
                             squeeze=False)
    colors = {m: ("tab:blue" if m in STREAMLEARN_MODELS else "tab:gray") for m in models}
    colors["hyperband_additive"] = "tab:orange"
    for ax, name in zip(axes.flat, datasets, strict=False):
        cells = [next((r for r in rows if r["dataset"] == name and r["model"] == m), None)
                 for m in models]
        errs = [None if c is None else c.get("test_error_pct") for c in cells]
        pos = np.arange(len(models))
        ax.barh(pos, [np.nan if e is None else e for e in errs],
                color=[colors[m] for m in models])
        for p, e, c in zip(pos, errs, cells, strict=True):
            text = "not run" if c is None else (_cell(c) if e is None else f" {e:.1f}")
            ax.text(0 if e is None else e, p, text if e is not None else f" {text}",
                    va="center", fontsize=6)
        ax.set_yticks(pos, [MODELS[m] for m in models], fontsize=7)
        ax.invert_yaxis()
        ax.set_title(name)
        ax.set_xlabel("test error %")
    for ax in list(axes.flat)[len(datasets):]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def threadpools() -> list[dict[str, Any]]:
    """The native thread pools loaded by the run (OpenMP, BLAS) and their thread counts."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return []
    return [{k: info.get(k) for k in ("user_api", "internal_api", "num_threads", "prefix")}
            for info in threadpool_info()]


def parse_list(text: str, allowed: tuple[str, ...] | list[str], what: str) -> list[str]:
    items = [s.strip() for s in text.split(",") if s.strip()]
    unknown = [s for s in items if s not in allowed]
    if unknown:
        raise SystemExit(f"unknown {what}: {', '.join(unknown)}; choose from "
                         f"{', '.join(allowed)}")
    return items


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help=f"{QUICK_TRAIN_ROWS:,d} training and {QUICK_TEST_ROWS:,d} test "
                             "rows per dataset (a smoke run)")
    parser.add_argument("--datasets", default=None,
                        help="comma-separated datasets (default: all; with --quick: "
                             f"{','.join(QUICK_DATASETS)}); choose from {','.join(DATASETS)}")
    parser.add_argument("--models", default=",".join(MODELS),
                        help="comma-separated methods (default: all): " + ", ".join(MODELS))
    parser.add_argument("--max-train-rows", type=int, default=None,
                        help="cap on training rows, a seeded random subset (default: all)")
    parser.add_argument("--score-rest", action="store_true",
                        help="with --max-train-rows, also score each method on the training "
                             "rows the cap leaves out (drawn like the training rows, where "
                             "the test split may not be)")
    parser.add_argument("--big-store", type=float, default=None, metavar="GB",
                        help="also time a bare pass and a one-epoch fit over a generated "
                             "zarr store of GB gigabytes (deleted afterwards)")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="results directory")
    parser.add_argument("--big-child", nargs=2, metavar=("WHAT", "PATH"),
                        help=argparse.SUPPRESS)
    parser.add_argument("--report-from", type=Path, nargs="+", default=None, metavar="JSON",
                        help="only rebuild the tables and the plot from results files (the "
                             ".partial.json a run cut short left, or runs with different "
                             "row caps, whose cells are put side by side; a cell measured "
                             "again by a later file replaces the earlier one)")
    args = parser.parse_args(argv)
    if args.big_child:
        big_child(*args.big_child)
        return
    if args.report_from:
        runs = [json.loads(path.read_text()) for path in args.report_from]
        report = runs[0]
        if len(runs) > 1:  # one report: the cells of every run, each run's settings kept;
            # a (dataset, method) cell measured again by a later run replaces the earlier
            cells: dict[tuple[str, str], dict[str, Any]] = {}
            for path, run in zip(args.report_from, runs, strict=True):
                for row in run["results"]:
                    cells[(row["dataset"], row["model"])] = {**row, "run": path.stem}
            report["results"] = list(cells.values())
            stores = [run["big_store"] for run in runs if run.get("big_store")]
            if stores:  # the latest run's store part
                report["big_store"] = stores[-1]
            report["runs"] = [{"file": str(path), "settings": run["settings"],
                               "total_runtime_s": run.get("total_runtime_s")}
                              for path, run in zip(args.report_from, runs, strict=True)]
        report.update(report_tables(report))
        args.out.mkdir(parents=True, exist_ok=True)
        plot(report["results"], args.out / "out_of_the_box.png")
        (args.out / "out_of_the_box.json").write_text(json.dumps(report, indent=2, default=str)
                                                      + "\n")
        for table in report["tables"]:
            print(f"\n### {table['title']}\n\n{markdown(table)}")
        return
    os.environ.setdefault("STREAMLEARN_PROGRESS", "0")
    chosen = args.datasets or ",".join(QUICK_DATASETS if args.quick else DATASETS)
    datasets = parse_list(chosen, DATASETS, "datasets")
    models = parse_list(args.models, list(MODELS), "models")
    for name in datasets:  # fail before any work when a real dataset is missing
        if name in ("mnist_oddeven", *REAL_DATASETS) and name != "adult":
            file = data_dir() / f"{'mnist' if name == 'mnist_oddeven' else name}.npz"
            if not file.exists():
                sys.exit(f"{file} not found: set STREAMLEARN_DATA to the directory "
                         "holding the benchmark datasets")
        if name == "adult" and not (data_dir() / "adult.data.gz").exists():
            sys.exit(f"{data_dir() / 'adult.data.gz'} not found: set STREAMLEARN_DATA")

    def log(message: str) -> None:
        print(message, flush=True)

    info = machine_info()
    start = time.perf_counter()
    ROWS.install()
    warm_up()
    rows: list[dict[str, Any]] = []

    def build_report() -> dict[str, Any]:
        return {
            "benchmark": "out_of_the_box",
            "quick": bool(args.quick),
            "machine": info,
            "versions": library_versions(("numpy", "numba", "zarr", "pyarrow", "streamlearn",
                                          *PEER_LIBRARIES)),
            "settings": {
                "datasets": datasets, "models": models, "max_train_rows": args.max_train_rows,
                "score_rest": bool(args.score_rest),
                "quick_train_rows": QUICK_TRAIN_ROWS if args.quick else None,
                "quick_test_rows": QUICK_TEST_ROWS if args.quick else None,
                "rbf_max_rows": RBF_MAX_ROWS, "additive_grid": ADDITIVE_GRID,
                "mixture_grid": MIXTURE_GRID, "linear_C_grid": LINEAR_C_GRID, "cv": CV_FOLDS,
                "hyperband_blocks": HYPERBAND_BLOCKS, "hyperband_epochs": HYPERBAND_EPOCHS,
                "vw_hidden": VW_HIDDEN, "spiral_points_per_class": SPIRAL_POINTS,
                "spiral_noise": SPIRAL_NOISE, "letter_train_rows": LETTER_TRAIN_ROWS,
                "seed": SEED, "data_dir": str(data_dir()),
                "threadpools": threadpools(),
            },
            "results": rows,
        }

    args.out.mkdir(parents=True, exist_ok=True)
    partial = args.out / "out_of_the_box.partial.json"
    for name in datasets:  # results so far are kept should a later dataset fail or be cut
        rows += run_dataset(name, models, args.max_train_rows, args.quick, log,
                            args.score_rest)
        partial.write_text(json.dumps(build_report(), indent=2, default=str) + "\n")
    report = build_report()
    if args.big_store:
        report["big_store"] = run_big_store(args.big_store, log)
    report["total_runtime_s"] = time.perf_counter() - start
    report.update(report_tables(report))
    plot(rows, args.out / "out_of_the_box.png")
    (args.out / "out_of_the_box.json").write_text(json.dumps(report, indent=2, default=str)
                                                  + "\n")
    for table in report["tables"]:
        print(f"\n### {table['title']}\n\n{markdown(table)}")
    partial.unlink(missing_ok=True)
    print(f"\ntotal {report['total_runtime_s']:.0f} s; results in "
          f"{args.out / 'out_of_the_box.json'}")


if __name__ == "__main__":
    main()
