"""``SuperSparseRegressor`` and ``SuperSparseClassifier``: models of a few virtual prototypes.

Paper 004: ``f(x) = sum_k beta_k exp(-gamma ||x - c_k||^2) + b`` with ``p`` learned
prototypes ``c_k``, so predicting costs ``p`` distances whatever the training size. Shows

- a regressor whose number of prototypes is chosen among ``--prototypes`` on held-out rows
  (eq. 8: validation loss plus a price per prototype);
- a classifier trained on labels;
- the SSVM reduction: an ``AdditiveSVC`` trained first, then imitated by a classifier of
  ``p`` prototypes fitted to its decision values (``SuperSparseClassifier.reduce``).

    python examples/supersparse.py --rows 50000 --prototypes 5,10,20
"""

from __future__ import annotations

import argparse

import numpy as np

from streamlearn.data.synthetic import additive_problem
from streamlearn.models.additive import AdditiveSVC
from streamlearn.models.supersparse import SuperSparseClassifier, SuperSparseRegressor


def regression_problem(n_rows: int, *, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A smooth target of 4 uniform features: a sum of two bumps and a wave."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, size=(n_rows, 4)).astype(np.float32)
    y = (np.exp(-4.0 * ((X[:, 0] - 0.3) ** 2 + X[:, 1] ** 2))
         - np.exp(-4.0 * ((X[:, 0] + 0.4) ** 2 + (X[:, 2] - 0.2) ** 2))
         + 0.3 * np.sin(2.0 * X[:, 3]) + 0.05 * rng.standard_normal(n_rows))
    return X, y.astype(np.float32)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=50_000, help="training rows")
    parser.add_argument("--prototypes", default="5,10,20",
                        help="candidate numbers of prototypes for the regressor")
    args = parser.parse_args(argv)
    n_test = max(args.rows // 4, 1000)
    candidates = [int(p) for p in args.prototypes.split(",")]

    X, y = regression_problem(args.rows, seed=0)
    X_test, y_test = regression_problem(n_test, seed=1)
    regressor = SuperSparseRegressor(n_prototypes=candidates, gamma=2.0, tradeoff=1e-4,
                                     progress=False).fit(X, y)
    print("SuperSparseRegressor: p, validation loss (MAE), eq. 8 criterion")
    for p, loss, criterion, _ in regressor.selection_path_:
        print(f"  {int(p):>4} {loss:>10.4f} {criterion:>10.4f}")
    print(f"chose p = {regressor.n_prototypes_}; test R2: {regressor.score(X_test, y_test):.4f}")

    X, y = additive_problem(args.rows, seed=0)
    X_test, y_test = additive_problem(n_test, seed=1)
    classifier = SuperSparseClassifier(n_prototypes=20, gamma=0.1, progress=False).fit(X, y)
    print(f"SuperSparseClassifier, 20 prototypes, test accuracy: "
          f"{classifier.score(X_test, y_test):.4f}")

    svc = AdditiveSVC(progress=False).fit(X, y)
    reduced = SuperSparseClassifier.reduce(svc, 20, X, gamma=0.1, progress=False)
    agree = np.mean(reduced.predict(X_test) == svc.predict(X_test))
    print(f"AdditiveSVC test accuracy: {svc.score(X_test, y_test):.4f}; reduced to 20 "
          f"prototypes it agrees with the SVC on {agree:.1%} of the test rows")
    print(f"reduced model test accuracy: {reduced.score(X_test, y_test):.4f}")


if __name__ == "__main__":
    main()
