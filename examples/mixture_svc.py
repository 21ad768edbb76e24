"""``MixtureSVC``: a mixture of linear SVMs, each in charge of a region of the input (paper 002).

Shows a problem no single linear SVM separates (the sign of ``x0 x1``, an XOR, with
``--features`` noise features besides), where RBF gating hands each quadrant to its own
linear expert. Components start at ``--components`` and those that explain too few rows are
pruned by EM; the log-likelihood of every epoch is in ``history_``. Stochastic EM updates the
parameters after every chunk (one pass per epoch); ``--em batch`` runs the paper's batch EM
(several passes per iteration).

    python examples/mixture_svc.py --rows 200000 --components 12
"""

from __future__ import annotations

import argparse

import numpy as np

from streamlearn.models.additive import AdditiveSVC
from streamlearn.models.mixture import MixtureSVC


def xor_problem(n_rows: int, n_features: int, *, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Label ``x0 x1 > 0`` over uniform features in ``[-1, 1]`` (the rest are noise)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, size=(n_rows, n_features)).astype(np.float32)
    return X, (X[:, 0] * X[:, 1] > 0).astype(np.int8)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=200_000, help="training rows")
    parser.add_argument("--features", type=int, default=2, help="features (2 carry the label)")
    parser.add_argument("--components", type=int, default=8, help="components at the start")
    parser.add_argument("--em", default="stochastic", choices=("stochastic", "batch"))
    parser.add_argument("--epochs", type=int, default=10, help="EM epochs")
    args = parser.parse_args(argv)

    X, y = xor_problem(args.rows, args.features, seed=0)
    X_test, y_test = xor_problem(max(args.rows // 4, 1000), args.features, seed=1)

    linear = AdditiveSVC(embedding="linear", progress=False).fit(X, y)
    print(f"one linear SVM, test accuracy: {linear.score(X_test, y_test):.4f}")

    model = MixtureSVC(n_components=args.components, C=10.0, em=args.em, epochs=args.epochs,
                       chunk_rows=max(args.rows // 20, 500), random_state=0, progress=False)
    model.fit(X, y)
    history = model.history_[0]
    print(f"{'epoch':>5} {'log-likelihood':>15} {'components':>10}")
    for epoch, entry in enumerate(history):
        print(f"{epoch:>5} {entry['loglik']:>15.1f} {entry['n_active']:>10}")
    active = np.flatnonzero(model.xi_[0] > 0)
    print(f"{len(active)} components left; their centres: "
          f"{np.round(model.centers_[0][active, :2], 2).tolist()}")
    print(f"mixture of linear SVMs, test accuracy: {model.score(X_test, y_test):.4f}")


if __name__ == "__main__":
    main()
