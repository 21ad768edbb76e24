"""``SparsePPRRegressor`` and ``SparseJSBoostClassifier``: sparse projection pursuit (paper 001).

Both models add one term per round along a direction ``u`` found by a search over
coordinates with an L1 penalty, so each direction uses only a few features:

- ``SparsePPRRegressor``: ``y ~ b + sum_k f_k(u_k . x)`` with smooth ridge functions ``f_k``,
  here on ``y = tanh(2 (x0 + x1)) + sin(3 x2) + noise`` with ``--features`` uniform
  features, of which ``x3`` onwards are noise and get exact zeros;
- ``SparseJSBoostClassifier``: boosting of half log-ratios of class histograms along the
  direction where the classes differ most, here on the built-in demo problem.

Each direction's non-zero features are printed next to the test score (R2, accuracy).

    python examples/projection_pursuit.py --rows 100000
"""

from __future__ import annotations

import argparse

import numpy as np

from streamlearn.data.synthetic import additive_problem
from streamlearn.models.projection_pursuit import SparseJSBoostClassifier, SparsePPRRegressor


def regression_problem(n_rows: int, n_features: int, *, seed: int) -> tuple[np.ndarray,
                                                                             np.ndarray]:
    """``y = tanh(2 (x0 + x1)) + sin(3 x2) + noise`` over uniform features in ``[-1, 1]``."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, size=(n_rows, n_features)).astype(np.float32)
    y = (np.tanh(2.0 * (X[:, 0] + X[:, 1])) + np.sin(3.0 * X[:, 2])
         + 0.1 * rng.standard_normal(n_rows))
    return X, y.astype(np.float32)


def nonzero(u: np.ndarray) -> str:
    return ", ".join(f"x{j}: {u[j]:+.2f}" for j in np.flatnonzero(u))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000, help="training rows")
    parser.add_argument("--features", type=int, default=10, help="features of the regression")
    parser.add_argument("--tau", type=float, default=15.0,
                        help="L1 strength: smaller is sparser (inf: plain projection pursuit)")
    args = parser.parse_args(argv)
    n_test = max(args.rows // 4, 1000)

    X, y = regression_problem(args.rows, args.features, seed=0)
    X_test, y_test = regression_problem(n_test, args.features, seed=1)
    ppr = SparsePPRRegressor(n_terms=3, tau=args.tau, progress=False).fit(X, y)
    print("SparsePPRRegressor directions:")
    for k, u in enumerate(ppr.projections_):
        print(f"  term {k}: {nonzero(u)}")
    print(f"test R2: {ppr.score(X_test, y_test):.4f}")

    X, y = additive_problem(args.rows, seed=0)
    X_test, y_test = additive_problem(n_test, seed=1)
    boost = SparseJSBoostClassifier(n_rounds=20, tau=args.tau, progress=False).fit(X, y)
    print(f"SparseJSBoostClassifier: {len(boost.projections_)} rounds, "
          f"{np.mean(boost.n_nonzero_):.1f} features per direction on average; first ones:")
    for k, u in enumerate(boost.projections_[:4]):
        print(f"  round {k}: {nonzero(u)}")
    print(f"test accuracy: {boost.score(X_test, y_test):.4f}")


if __name__ == "__main__":
    main()
