"""Pair terms and explanations: an additive model with selected feature pairs, drawn.

A label that depends on two curves and on two products of features (``x2 * x3``,
``x4 * x5``), which no sum of per-feature curves can follow: ``AdditiveSVC`` with its
default ``interactions="auto"`` screens every pair in one streamed pass, trains the best
ones beside the curves and keeps them because they lower the held-out log-loss;
``interactions=0`` is the per-feature model. Then ``streamlearn.plot.explain`` writes the
curves (with the data's density under them), the pair surfaces and the importances as PNGs
with an ``index.html`` (``streamlearn explain MODEL DATA --out DIR`` does the same from a
model file).

    python examples/pair_terms.py --rows 100000 --out pair_terms_report
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from streamlearn import plot
from streamlearn.models import AdditiveSVC


def problem(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Six uniform features; the label of two curves, two products and noise."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, 6)).astype(np.float32)
    f = np.sin(3 * X[:, 0]) + X[:, 1] ** 2 + 2 * X[:, 2] * X[:, 3] - 2 * X[:, 4] * X[:, 5]
    return X, (f + 0.3 * rng.normal(size=n) > 0.3).astype(np.int64)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000, help="training rows")
    parser.add_argument("--out", type=Path, default=None,
                        help="directory for the pictures (default: a temporary one)")
    args = parser.parse_args(argv)
    X, y = problem(args.rows, seed=0)
    X_test, y_test = problem(max(args.rows // 4, 2000), seed=1)

    print(f"{'model':<34} {'test accuracy':>13} {'fit s':>7}")
    for label, model in (("per-feature curves only", AdditiveSVC(interactions=0)),
                         ("curves and pairs (the default)", AdditiveSVC())):
        started = time.perf_counter()
        model.fit(X, y)
        print(f"{label:<34} {model.score(X_test, y_test):>13.4f} "
              f"{time.perf_counter() - started:>7.2f}")
    print(f"test accuracy with pairs: {model.score(X_test, y_test):.4f}")
    check = model.interaction_check_
    pairs = model.interactions_
    best = "the best three of them" if len(pairs) > 3 else "best screened first"
    print(f"pairs kept: {check['kept']}; {len(pairs)} pair term(s), {best}: {pairs[:3]}")
    if "held_out_log_loss_with" in check:
        print(f"held-out log-loss {check['held_out_log_loss_without']:.4f} without pairs, "
              f"{check['held_out_log_loss_with']:.4f} with")
    with tempfile.TemporaryDirectory() as tmp:
        out = args.out if args.out is not None else Path(tmp)
        index = plot.explain(model, out, X[:5000])
        print(f"pictures: {sorted(p.name for p in out.glob('*.png'))}")
        if args.out is not None:
            print(f"open {index}")


if __name__ == "__main__":
    main()
