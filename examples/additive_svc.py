"""``AdditiveSVC``: an SVM whose decision function is a sum of one smooth curve per feature.

Shows the scikit-learn style use on in-memory arrays (the same calls take a path or a
``Dataset`` and stream it): the additive embeddings (B-splines, Fourier, Hermite) against a
linear SVM on a problem whose label depends non-linearly on each feature, labels given as
strings and returned as strings, calibrated probabilities, a checkpointed fit (run it again
with the same checkpoint and it resumes instead of starting over), and a model file that
loads back to the same predictions.

    python examples/additive_svc.py --rows 100000
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from streamlearn.data.synthetic import additive_problem
from streamlearn.models.additive import AdditiveSVC


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000, help="training rows")
    parser.add_argument("--epochs", type=int, default=None,
                        help="cap on the solver's passes (default: the model's own cap; "
                             "each fit stops earlier by its convergence rule)")
    args = parser.parse_args(argv)

    X, y01 = additive_problem(args.rows, seed=0)
    X_test, y01_test = additive_problem(max(args.rows // 4, 1000), seed=1)
    names = np.array(["no", "yes"])  # any labels work; predictions come back as given
    y, y_test = names[y01], names[y01_test]

    AdditiveSVC(progress=False).fit(X[:500], y[:500])  # loads the compiled kernels once
    print(f"{'model':<36} {'test accuracy':>13} {'fit s':>7}")
    models = {
        "linear SVM": AdditiveSVC(embedding="linear"),
        "B-splines, degree 1, 10 bases": AdditiveSVC(embedding="bspline", n_bases=10),
        "B-splines, degree 3, 12 bases, D2": AdditiveSVC(embedding="bspline", degree=3,
                                                         n_bases=12, penalty_order=2),
        "Fourier, 4 terms": AdditiveSVC(embedding="fourier", n_terms=4),
        "Hermite, 4 terms": AdditiveSVC(embedding="hermite", n_terms=4),
    }
    for label, model in models.items():
        model.set_params(random_state=0, progress=False)
        if args.epochs is not None:  # a lower cap warns when a fit reaches it
            model.set_params(epochs=args.epochs)
        started = time.perf_counter()
        model.fit(X, y)
        seconds = time.perf_counter() - started
        print(f"{label:<36} {model.score(X_test, y_test):>13.4f} {seconds:>7.2f}")

    model = models["B-splines, degree 1, 10 bases"]
    proba = model.predict_proba(X_test[:3])
    print(f"classes {model.classes_.tolist()}; first test rows: predicted "
          f"{model.predict(X_test[:3]).tolist()}, P(yes) {np.round(proba[:, 1], 3).tolist()}")

    with tempfile.TemporaryDirectory() as tmp:
        checkpoint = Path(tmp) / "checkpoint"
        params = model.get_params()
        first = AdditiveSVC(**params).fit(X, y, checkpoint=checkpoint, checkpoint_every=1)
        started = time.perf_counter()
        again = AdditiveSVC(**params).fit(X, y, checkpoint=checkpoint)  # all passes stored
        print(f"checkpointed fit run again: {time.perf_counter() - started:.2f} s, same "
              f"model: {np.array_equal(first.coef_d_, again.coef_d_)}")

        path = model.save(Path(tmp) / "additive.slm")
        loaded = AdditiveSVC.load(path)
        same = np.array_equal(loaded.decision_function(X_test), model.decision_function(X_test))
        print(f"saved {path.stat().st_size:,} bytes; loaded model gives the same scores: {same}")
        print(f"test accuracy (B-splines): {loaded.score(X_test, y_test):.4f}")


if __name__ == "__main__":
    main()
