"""``ShareBoostClassifier``: a multiclass model whose classes share a few selected features.

Shows forward greedy selection on a problem with many features of which few matter: each
round adds the column (a raw feature; ``--family stumps`` or ``anchors`` for non-linear
columns) whose gradient is largest for all classes together and re-fits every selected
column; ``validation=`` records the held-out error of every round, so the whole
error-vs-sparsity path comes from one run: it stops falling once the informative features
are in.

The generated problem: ``--features`` standard normal features, of which the first
``--informative`` decide the class (``argmax`` of random linear scores plus noise).

    python examples/shareboost.py --rows 100000 --rounds 20 --family stumps
"""

from __future__ import annotations

import argparse

import numpy as np

from streamlearn.models.shareboost import ShareBoostClassifier


def multiclass_problem(n_rows: int, n_features: int, n_informative: int, n_classes: int, *,
                       seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows whose class depends on the first ``n_informative`` features only."""
    scores = np.random.default_rng(12345).standard_normal((n_informative, n_classes))
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_rows, n_features)).astype(np.float32)
    noisy = X[:, :n_informative] @ scores + 0.3 * rng.standard_normal((n_rows, n_classes))
    return X, np.argmax(noisy, axis=1)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000, help="training rows")
    parser.add_argument("--features", type=int, default=40, help="features in all")
    parser.add_argument("--informative", type=int, default=6, help="features that matter")
    parser.add_argument("--classes", type=int, default=5, help="classes")
    parser.add_argument("--rounds", type=int, default=12, help="columns to select")
    parser.add_argument("--family", default="linear", choices=("linear", "stumps", "anchors"),
                        help="candidate columns: raw features, decision stumps, anchor pieces")
    args = parser.parse_args(argv)

    def problem(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
        return multiclass_problem(n, args.features, args.informative, args.classes, seed=seed)

    X, y = problem(args.rows, seed=0)
    X_val, y_val = problem(max(args.rows // 4, 1000), seed=1)
    X_test, y_test = problem(max(args.rows // 4, 1000), seed=2)

    model = ShareBoostClassifier(n_rounds=args.rounds, features=args.family, n_bins=16)
    model.fit(X, y, validation=(X_val, y_val))

    path = model.path_
    print(f"{'round':>5} {'features':>8} {'train error':>11} {'validation error':>16}")
    for t in range(len(path["n_selected"])):
        print(f"{t:>5} {path['n_selected'][t]:>8} {path['train_error'][t]:>11.4f} "
              f"{path['validation_error'][t]:>16.4f}")
    used = sorted(int(f) for f in model.used_features_)
    print(f"features used: {used} (the informative ones are 0-{args.informative - 1})")
    print(f"test accuracy: {model.score(X_test, y_test):.4f}")


if __name__ == "__main__":
    main()
