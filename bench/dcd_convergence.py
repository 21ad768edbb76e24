"""How many epochs dual coordinate descent needs, on data whose embedded rows share a lot.

``AdditiveSVC(solver="dcd")`` on the first 20,000 rows of a9a (123 0/1 features: each
embedded row puts weight on the same "value 0" basis of most features) and of ijcnn1 (22
features), for ``C`` in {0.1, 1} and the penalties ``D0`` and ``D1``, with the defaults
otherwise (``epochs=50``, ``tol=1e-2``): epochs run, the relative duality gap of the last
checked model, whether the fit stopped at its cap (``ConvergenceWarning``), test error on
the provided test split, and fit seconds. With ``--baseline DIR`` (a checkout of another
commit) every case also runs on that code, each fit in a fresh process, so that a change
of the solver is measured against the code before it on the same machine.

Run ``STREAMLEARN_DATA=../shared/data python bench/dcd_convergence.py [--baseline DIR]``
(``--quick``: a9a only, ``C = 0.1``); results go to ``bench/results/dcd_convergence.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine_info import library_versions, machine_info

RESULTS_DIR = Path(__file__).resolve().parent / "results"
ROWS = 20_000
DATASETS = ("a9a", "ijcnn1")
CS = (0.1, 1.0)
ORDERS = (0, 1)


def fit_case(dataset: str, C: float, order: int) -> dict[str, Any]:
    """One fit in this process, with whatever ``streamlearn`` is first on the path."""
    from out_of_the_box import load
    from sklearn.exceptions import ConvergenceWarning

    import streamlearn
    from streamlearn.models import AdditiveSVC

    X, y, Xt, yt = load(dataset)[:4]
    X, y = X[:ROWS], y[:ROWS]
    model = AdditiveSVC(solver="dcd", C=C, penalty_order=order, interactions=0,
                        random_state=0, progress=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start = time.perf_counter()
        model.fit(X, y)
        seconds = time.perf_counter() - start
    return {"dataset": dataset, "C": C, "penalty_order": order, "epochs": int(model.n_iter_),
            "last_gap": float(model.monitor_loss_[-1]) if model.monitor_loss_ else None,
            "capped": any(issubclass(w.category, ConvergenceWarning) for w in caught),
            "test_error_pct": float(100 * np.mean(model.predict(Xt) != yt)),
            "fit_s": seconds, "centred": hasattr(model, "dcd_centre_"),
            "streamlearn": str(Path(streamlearn.__file__).resolve().parent.parent)}


def run_in_process(source: Path, dataset: str, C: float, order: int) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(source), str(Path(__file__).resolve().parent)]))
    out = subprocess.run([sys.executable, __file__, "--case", f"{dataset},{C},{order}"],
                         env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def commit_of(path: Path) -> str | None:
    try:
        return subprocess.run(["git", "-C", str(path), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a9a, C = 0.1 only")
    parser.add_argument("--baseline", type=Path, default=None,
                        help="a checkout of other code to run the same cases on")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR)
    parser.add_argument("--case", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.case:
        dataset, C, order = args.case.split(",")
        print(json.dumps(fit_case(dataset, float(C), int(order))))
        return
    here = Path(__file__).resolve().parent.parent
    datasets, cs = (("a9a",), (0.1,)) if args.quick else (DATASETS, CS)
    sources = {"current": here}
    if args.baseline is not None:
        sources["baseline"] = args.baseline.resolve()
    rows = []
    for dataset in datasets:
        for C in cs:
            for order in ORDERS:
                row: dict[str, Any] = {"dataset": dataset, "C": C, "penalty_order": order}
                for label, source in sources.items():
                    r = run_in_process(source, dataset, C, order)
                    row[label] = r
                    gap = "-" if r["last_gap"] is None else f"{r['last_gap']:.3f}"
                    print(f"{dataset:7s} C={C:<4} D{order} {label:8s} epochs {r['epochs']:3d}"
                          f"{' (cap)' if r['capped'] else '      '} gap {gap:>6s}  "
                          f"error {r['test_error_pct']:5.2f} %  {r['fit_s']:5.1f} s",
                          flush=True)
                rows.append(row)
    report = {"benchmark": "dcd_convergence", "machine": machine_info(),
              "versions": library_versions(), "rows": ROWS, "quick": args.quick,
              "commit": commit_of(here),
              "baseline_commit": None if args.baseline is None else commit_of(args.baseline),
              "results": rows}
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "dcd_convergence.json"
    path.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
