"""Pair terms: ``AdditiveSVC(interactions=k)`` against EBM, LightGBM and gradient boosting.

Part 1, accuracy. On adult, ijcnn1, satimage, letter and pendigits (the provided splits, all
training rows, shuffled once as in ``bench/out_of_the_box.py``) and on a generated problem
with known pair terms (there also at ``k`` = the true count), side by side in one run,
each method with its library's defaults:

- ``AdditiveSVC(interactions=0)`` (per-feature curves only), ``AdditiveSVC()`` (its
  default ``interactions="auto"``: ``min(2 d, 64)`` pairs, kept when they lower the
  held-out log-loss) and ``AdditiveSVC(interactions=k)`` for ``k`` in ``KS``;
- ``ExplainableBoostingClassifier()`` of ``interpret`` (its defaults: ``3 x n_features``
  pairs for two classes, 14 outer bags); ``lightgbm.LGBMClassifier()``; scikit-learn's
  ``HistGradientBoostingClassifier()``.

Each fit runs in a fresh child process that loads the data itself, so its peak RSS
(``ru_maxrss``) is that fit's, data included; fit seconds are wall clock around ``fit``
(streamlearn's numba kernels come from the cache, compiled by a warm-up run first, and each
``AdditiveSVC`` fit follows an untimed fit of the same model on the same rows in the same
process, so that its kernels are loaded from the cache before the timed fit: a kernel's first
call in a process loads it, and the screening pass is one call where the epochs are many;
the same rows, because small chunks take numpy paths where larger ones call a kernel).
For ``AdditiveSVC(interactions=k)`` the time of every pass is recorded, so the screening pass
is compared with an epoch. On the generated problem (``N_FEATURES`` uniform features, the label
the sign of two main effects, ``len(TRUE_PAIRS)`` pair products and noise), it records
whether every true pair is among the chosen ones at ``interactions = len(TRUE_PAIRS)``.

Part 2, memory and time against rows. The generated problem at ``BASE_ROWS`` x 1, 4, 16 and
48 rows (25,000 to 1,200,000), written to a zarr store:
``AdditiveSVC(interactions=len(TRUE_PAIRS))`` streams it in chunks; EBM is given the rows
in memory (it trains in memory). Peak RSS and fit seconds per size; the stores are deleted
afterwards.

Run ``python bench/interactions.py`` (``STREAMLEARN_DATA`` as for the other scripts; about
an hour on 2 cores, most of it EBM) or ``--quick`` (the generated problem only, part 2
at ``QUICK_BASE_ROWS`` x 1 and 2, ours only). Results go to ``bench/results/interactions.json`` and
``bench/results/interactions_memory.png``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path
from queue import Empty
from typing import Any, ClassVar

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine_info import library_versions, machine_info
from out_of_the_box import encode_labels, load, subsample

RESULTS_DIR = Path(__file__).resolve().parent / "results"
DATASETS = ("adult", "ijcnn1", "satimage", "letter", "pendigits")
QUICK_DATASETS: tuple[str, ...] = ()
KS = (10, 30)
SEED = 0
N_FEATURES = 10
TRUE_PAIRS = ((0, 1), (2, 5), (6, 9))
GENERATED_TRAIN = 50_000
GENERATED_TEST = 50_000
BASE_ROWS = 25_000
GROWTH = (1, 4, 16, 48)
QUICK_GROWTH = (1, 2)
QUICK_BASE_ROWS = 5_000
QUICK_GENERATED_TRAIN = 10_000
CHUNK_ROWS = 5_000
METHODS = ("additive_k0", "additive_auto", *(f"additive_k{k}" for k in KS), "ebm", "lightgbm",
           "hgb")
#: The methods of part 2: ours streamed from the store, EBM given its rows in memory.
GROWTH_METHODS = ("additive_pairs", "ebm")
#: Beside them on request (``--methods``): ``AdditiveSVC(value_terms=False)``, the default
#: model without value terms.
NO_VALUES = "additive_no_values"


def generated(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Uniform features on [-1, 1]; label: sign of two main effects, the products of
    ``TRUE_PAIRS`` and Gaussian noise of sd 0.5."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, N_FEATURES)).astype(np.float32)
    f = np.sin(3 * X[:, 3]) + X[:, 4] ** 2 - 1 / 3
    for a, b in TRUE_PAIRS:
        f += 2.0 * X[:, a] * X[:, b]
    return X, (f + 0.5 * rng.normal(size=n) > 0).astype(np.int64)


def dataset(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Training and test rows, labels coded 0..K-1."""
    if name.startswith("generated"):  # "generated" or "generated-ROWS"
        n = int(name.split("-")[1]) if "-" in name else GENERATED_TRAIN
        X, y = generated(n, SEED)
        Xt, yt = generated(GENERATED_TEST, SEED + 1)
        return X, y, Xt, yt
    X, y, Xt, yt = load(name)
    X, y = subsample(X, y, None, SEED, shuffle=True)
    y, yt, _ = encode_labels(y, yt)
    return X, y, Xt, yt


class TimedEngine:
    """A ``LocalEngine`` that records each pass's description and seconds."""

    def __new__(cls) -> Any:
        from streamlearn.engine import LocalEngine

        class Timed(LocalEngine):
            log: ClassVar[list[tuple[str, float]]] = []

            def run(self, pass_: Any, data: Any, **options: Any) -> Any:
                start = time.perf_counter()
                out = super().run(pass_, data, **options)
                Timed.log.append((str(options.get("description", "")),
                                  time.perf_counter() - start))
                return out

        return Timed(progress=False)


def make(method: str, n_classes: int) -> Any:
    """The estimator of a method, with its library's defaults."""
    if method.startswith("additive"):
        from streamlearn.models import AdditiveSVC

        if method == NO_VALUES:
            return AdditiveSVC(value_terms=False, progress=False, engine=TimedEngine())
        k = "auto" if method == "additive_auto" else int(method[len("additive_k"):])
        return AdditiveSVC(interactions=k, progress=False, engine=TimedEngine())
    if method == "ebm":
        from interpret.glassbox import ExplainableBoostingClassifier

        return ExplainableBoostingClassifier(random_state=SEED)
    if method == "lightgbm":
        import lightgbm

        return lightgbm.LGBMClassifier(verbose=-1, random_state=SEED)
    from sklearn.ensemble import HistGradientBoostingClassifier

    return HistGradientBoostingClassifier(random_state=SEED)


def fit_child(name: str, method: str, queue: Any) -> None:
    """Fit one method on one dataset and report error, seconds, peak RSS (child process)."""
    X, y, Xt, yt = dataset(name)
    if method.startswith("additive"):  # load the kernels of this data's fit (see above)
        make(method, int(y.max()) + 1).fit(X, y)
    model = make(method, int(y.max()) + 1)
    start = time.perf_counter()
    model.fit(X, y)
    fit_s = time.perf_counter() - start
    error = float(np.mean(model.predict(Xt) != yt) * 100)
    out: dict[str, Any] = {"dataset": name, "method": method, "test_error_pct": error,
                           "fit_s": fit_s, "n_train": len(y), "n_features": X.shape[1],
                           "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
                           / 1024}
    if method.startswith("additive"):
        out.update(pass_times(model.engine.log))
        out["interactions"] = [list(p) for p in model.interactions_]
        out["interaction_check"] = getattr(model, "interaction_check_", None)
        out["value_terms"] = {name: len(values) for name, values in model.value_terms_}
        out["value_check"] = getattr(model, "value_check_", None)
    if method == "ebm":
        out["interactions"] = [list(model.feature_names_in_[i] for i in term)
                               for term in model.term_features_ if len(term) == 2]
    queue.put(out)


def pass_times(log: list[tuple[str, float]]) -> dict[str, Any]:
    """Every pass of a fit with its seconds; the screening pass's, and the median epoch of
    the per-feature model (the epochs before the screening) and of the model with pairs
    (after it, the model the fit keeps training)."""
    screen_at = next((i for i, (d, _) in enumerate(log) if d.startswith("screen pairs")), None)
    values_at = next((i for i, (d, _) in enumerate(log) if d.startswith("screen value")), None)
    epochs = [(i, s) for i, (d, s) in enumerate(log) if "epoch" in d]
    before = [s for i, s in epochs if screen_at is None or i < screen_at]
    after = [s for i, s in epochs if screen_at is not None and i > screen_at]
    return {"passes": [[d, round(s, 4)] for d, s in log],
            "screen_s": log[screen_at][1] if screen_at is not None else None,
            "value_screen_s": log[values_at][1] if values_at is not None else None,
            "median_epoch_s": float(np.median(before)) if before else None,
            "median_pair_epoch_s": float(np.median(after)) if after else None}


def run_child(target: Any, *args: Any) -> dict[str, Any]:
    """Run ``target(*args, queue)`` in a fresh process and return what it put."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=target, args=(*args, queue))
    proc.start()
    while True:  # a child that dies (a crash, the OOM killer) puts nothing: say so
        try:
            result = queue.get(timeout=5.0)
            break
        except Empty:
            if not proc.is_alive():
                raise RuntimeError(f"{getattr(target, '__name__', target)}{args} exited "
                                   f"with code {proc.exitcode} before reporting") from None
    proc.join()
    return result


def write_store(path: Path, n: int) -> None:
    """The generated problem's ``n`` rows as a zarr store of ``CHUNK_ROWS``-row chunks."""
    import zarr

    group = zarr.open_group(str(path), mode="w")
    X_all = group.create_array("X", shape=(n, N_FEATURES), dtype="float32",
                               chunks=(CHUNK_ROWS, N_FEATURES))
    y_all = group.create_array("y", shape=(n,), dtype="int64", chunks=(CHUNK_ROWS,))
    for start in range(0, n, CHUNK_ROWS):
        X, y = generated(min(CHUNK_ROWS, n - start), SEED + 100 + start // CHUNK_ROWS)
        X_all[start:start + X.shape[0]] = X
        y_all[start:start + X.shape[0]] = y


def growth_child(store: str, method: str, queue: Any) -> None:
    """Fit on a store: streamed by streamlearn, loaded into memory for EBM."""
    import streamlearn as sl

    Xt, yt = generated(GENERATED_TEST, SEED + 1)
    start = time.perf_counter()
    if method == "ebm":
        import zarr

        group = zarr.open_group(store, mode="r")
        model = make("ebm", 2).fit(group["X"][:], group["y"][:])
    else:
        from streamlearn.models import AdditiveSVC

        ds = sl.open_dataset(store, chunk_rows=CHUNK_ROWS)
        model = AdditiveSVC(interactions=len(TRUE_PAIRS), progress=False,
                            engine=TimedEngine()).fit(ds)
    fit_s = time.perf_counter() - start
    out = {"method": method, "fit_s": fit_s,
           "test_error_pct": float(np.mean(model.predict(Xt) != yt) * 100),
           "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    if method != "ebm":
        out.update(pass_times(model.engine.log))
    queue.put(out)


def warm_child(queue: Any) -> None:
    """Compile (or load) the numba kernels of the additive model with pairs."""
    from streamlearn.models import AdditiveSVC

    X, y = generated(3000, SEED)
    AdditiveSVC(interactions=2, progress=False).fit(X, y).predict(X)
    queue.put({})


def plot(growth: list[dict[str, Any]], path: Path) -> None:
    """Peak RSS and fit seconds against rows, one line per method."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for method, label in (("additive_pairs", "AdditiveSVC(interactions=3), streamed"),
                          ("ebm", "EBM, in memory")):
        rows = [r for r in growth if r["method"] == method]
        n = [r["n_rows"] for r in rows]
        axes[0].plot(n, [r["peak_rss_mib"] for r in rows], "o-", label=label)
        axes[1].plot(n, [r["fit_s"] for r in rows], "o-", label=label)
    sizes = sorted({r["n_rows"] for r in growth})
    for ax, ylabel in zip(axes, ("peak RSS (MiB)", "fit seconds"), strict=True):
        ax.set_xscale("log")
        ax.minorticks_off()
        ax.set_xticks(sizes, [f"{v:,}" for v in sizes])
        ax.set_xlabel("training rows")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def largest_fit(growth: list[dict[str, Any]]) -> str:
    """Fit seconds of ours and EBM at the most rows both ran, as a sentence."""
    fits = {(r["n_rows"], r["method"]): r["fit_s"] for r in growth}
    both = [n for n, m in fits if m == "ebm" and (n, "additive_pairs") in fits]
    if not both:
        return ""
    n = max(both)
    ours, ebm = fits[(n, "additive_pairs")], fits[(n, "ebm")]
    return (f"Fit at {n:,} rows: ours {ours:.1f} s, EBM {ebm:.0f} s ({ebm / ours:.0f}x). ")


def report_tables(report: dict[str, Any]) -> dict[str, Any]:
    """Title, summary, tables and plots of the report (from the JSON alone)."""
    results = report["results"]
    methods = list(dict.fromkeys(r["method"] for r in results))
    datasets = list(dict.fromkeys(r["dataset"] for r in results))
    cell = {(r["dataset"], r["method"]): r for r in results}

    def show(d: str, m: str) -> Any:
        r = cell.get((d, m))
        return None if r is None else f"{r['test_error_pct']:.2f} ({r['fit_s']:.1f} s)"

    errors = {"title": "Test error % (fit seconds), each method's defaults",
              "columns": ["dataset", *methods],
              "rows": [[d, *(show(d, m) for m in methods)] for d in datasets]}
    def seconds(value: float | None) -> float | None:
        return None if value is None else round(value, 3)

    screen = {"title": "AdditiveSVC with pairs: the screening pass against an epoch",
              "columns": ["dataset", "method", "screen s", "median epoch s, per-feature model",
                          "median epoch s, with pairs", "peak RSS MiB", "pairs"],
              "rows": [[r["dataset"], r["method"], seconds(r["screen_s"]),
                        seconds(r["median_epoch_s"]), seconds(r.get("median_pair_epoch_s")),
                        round(r["peak_rss_mib"]),
                        ", ".join(" x ".join(p) for p in r["interactions"][:5])
                        + (" ..." if len(r["interactions"]) > 5 else "")]
                       for r in results if r["method"].startswith("additive_")
                       and r["method"] != "additive_k0"]}
    growth = {"title": "Rows against peak RSS and fit seconds (generated problem)",
              "columns": ["rows", "method", "peak RSS MiB", "fit s", "test error %",
                          "screen s", "median epoch s, with pairs"],
              "rows": [[r["n_rows"], r["method"], round(r["peak_rss_mib"]),
                        round(r["fit_s"], 2), round(r["test_error_pct"], 2),
                        seconds(r.get("screen_s")), seconds(r.get("median_pair_epoch_s"))]
                       for r in report["growth"]]}
    found = ", ".join(f"{m}: {'yes' if v else 'no'}"
                      for m, v in report["true_pairs_found"].items())

    def error(d: str, m: str) -> float | None:
        r = cell.get((d, m))
        return None if r is None else float(r["test_error_pct"])

    parts = []
    for d in ("adult", "ijcnn1", "satimage"):
        ours, lgbm, ebm = error(d, "additive_auto"), error(d, "lightgbm"), error(d, "ebm")
        if None not in (ours, lgbm, ebm):
            parts.append(f"{d} {ours:.2f} % = {ours / lgbm:.2f}x LightGBM's {lgbm:.2f} "
                         f"(target 1.15x), EBM {ebm:.2f}")
    plain, ours, lgbm = (error("letter", m) for m in ("additive_k0", "additive_auto",
                                                      "lightgbm"))
    letter_ebm = error("letter", "ebm")
    if None not in (plain, ours, lgbm, letter_ebm):
        parts.append(f"letter {ours:.2f} %: {(ours - lgbm) / (plain - lgbm):.2f} of the "
                     f"per-feature model's gap to LightGBM (target 0.5), EBM "
                     f"{letter_ebm:.2f}")
    ours_rss = [r["peak_rss_mib"] for r in report["growth"] if r["method"] != "ebm"]
    ebm_rss = [r["peak_rss_mib"] for r in report["growth"] if r["method"] == "ebm"]
    screens = [(r["screen_s"], r.get("median_pair_epoch_s") or r["median_epoch_s"])
               for r in results if r["method"] == "additive_auto" and r.get("screen_s")]
    ratios = [a / b for a, b in screens if b]
    grown = [(r["n_rows"], r["screen_s"] / r["median_pair_epoch_s"]) for r in report["growth"]
             if r.get("screen_s") and r.get("median_pair_epoch_s")]
    summary = ("AdditiveSVC() (its default interactions=\"auto\") against EBM, LightGBM and "
               "HistGradientBoosting with their defaults and against itself without pairs. "
               + ("; ".join(parts) + ". " if parts else "")
               + f"All true pairs of the generated problem chosen: "
               f"{found}. "
               + (f"Peak RSS over the rows: ours {min(ours_rss):.0f}-{max(ours_rss):.0f} "
                  f"MiB ({max(ours_rss) / min(ours_rss):.2f}x, target within 1.10x)"
                  + (f", EBM {min(ebm_rss):.0f}-{max(ebm_rss):.0f} MiB" if ebm_rss else "")
                  + ". " if ours_rss else "")
               + largest_fit(report["growth"])
               + "The screening pass took "
               f"{min(ratios, default=0):.1f}-{max(ratios, default=0):.1f}x an epoch of the "
               "model with pairs on the datasets"
               + ("; on the generated rows " + ", ".join(f"{ratio:.1f}x at {n:,}"
                                                       for n, ratio in grown) if grown else "")
               + " (target 1x).")
    return {"title": "Pair terms (AdditiveSVC interactions) against EBM and boosting",
            "summary": summary, "tables": [errors, screen, growth],
            "plots": ["interactions_memory.png"] if report["growth"] else []}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="the generated problem only; part 2 at 2 small sizes")
    parser.add_argument("--datasets", default=None, help="comma-separated dataset names")
    parser.add_argument("--methods", default=None,
                        help="comma-separated subset of the methods (default: all)")
    parser.add_argument("--no-growth", action="store_true",
                        help="skip part 2 (the rows grown 1x to 16x)")
    parser.add_argument("--growth-methods", default="additive_pairs,ebm",
                        help="comma-separated methods of part 2 (default: both; "
                             "--quick: ours only)")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="results directory")
    args = parser.parse_args(argv)
    growth_methods = ("additive_pairs",) if args.quick else tuple(
        args.growth_methods.split(","))
    if set(growth_methods) - set(GROWTH_METHODS):
        parser.error(f"unknown growth methods; choose from {list(GROWTH_METHODS)}")
    chosen_methods = args.methods.split(",") if args.methods else None
    unknown = sorted(set(chosen_methods or ())
                     - {*METHODS, f"additive_k{len(TRUE_PAIRS)}", NO_VALUES})
    if unknown:
        parser.error(f"unknown methods {unknown}; choose from {list(METHODS)}")
    names = (args.datasets.split(",") if args.datasets
             else list(QUICK_DATASETS if args.quick else DATASETS))
    names.append(f"generated-{QUICK_GENERATED_TRAIN}" if args.quick else "generated")
    started = time.perf_counter()
    run_child(warm_child)
    results = []
    for name in names:
        extra_methods = ((f"additive_k{len(TRUE_PAIRS)}",) if name.startswith("generated")
                         else ())
        asked = (NO_VALUES,) if chosen_methods and NO_VALUES in chosen_methods else ()
        for method in (*METHODS, *asked, *extra_methods):
            if chosen_methods is not None and method not in chosen_methods:
                continue
            row = run_child(fit_child, name, method)
            results.append(row)
            extra = ""
            if row.get("screen_s") is not None:
                extra = (f"  screen {row['screen_s']:.2f}s / epoch {row['median_epoch_s']:.2f}s"
                         f" (with pairs {row['median_pair_epoch_s'] or 0.0:.2f}s)")
            print(f"{name:10s} {method:14s} error {row['test_error_pct']:6.2f}%  "
                  f"fit {row['fit_s']:7.2f}s  peak {row['peak_rss_mib']:7.0f} MiB{extra}",
                  flush=True)
    truth = {(f"x{a}", f"x{b}") for a, b in TRUE_PAIRS}
    found = {}
    for row in results:
        if (row["dataset"].startswith("generated") and row["method"].startswith("additive_")
                and row["method"] != "additive_k0"):
            chosen = {tuple(p) for p in row["interactions"]}
            found[row["method"]] = sorted(truth & chosen) == sorted(truth)
    growth = []
    workdir = Path(tempfile.mkdtemp(prefix="interactions_"))
    try:
        for factor in () if args.no_growth else (QUICK_GROWTH if args.quick else GROWTH):
            n = (QUICK_BASE_ROWS if args.quick else BASE_ROWS) * factor
            store = workdir / f"rows_{n}.zarr"
            write_store(store, n)
            for method in growth_methods:
                row = run_child(growth_child, str(store), method)
                row["n_rows"] = n
                growth.append(row)
                extra = ""
                if row.get("screen_s") is not None:
                    extra = (f"  screen {row['screen_s']:.2f}s / epoch "
                             f"{row['median_pair_epoch_s'] or 0.0:.2f}s")
                print(f"rows {n:8d} {method:14s} fit {row['fit_s']:7.2f}s  "
                      f"peak {row['peak_rss_mib']:7.0f} MiB  "
                      f"error {row['test_error_pct']:.2f}%{extra}", flush=True)
            shutil.rmtree(store)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    report = {"benchmark": "interactions", "machine": machine_info(),
              "versions": library_versions(("numpy", "numba", "streamlearn", "interpret",
                                            "lightgbm", "scikit-learn")),
              "settings": {"quick": bool(args.quick), "seed": SEED, "ks": list(KS),
                           "datasets": names, "chunk_rows": CHUNK_ROWS,
                           "methods": chosen_methods or list(METHODS),
                           "growth_methods": list(growth_methods),
                           "growth_rows": sorted({r["n_rows"] for r in growth})},
              "true_pairs": [[f"x{a}", f"x{b}"] for a, b in TRUE_PAIRS],
              "true_pairs_found": found, "results": results, "growth": growth,
              "total_runtime_s": time.perf_counter() - started}
    report.update(report_tables(report))
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "interactions.json"
    path.write_text(json.dumps(report, indent=2) + "\n")
    if growth:
        plot(growth, args.out / "interactions_memory.png")
    print(f"true pairs found: {found}")
    print(f"results in {path}")


if __name__ == "__main__":
    main()
