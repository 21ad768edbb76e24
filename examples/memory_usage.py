"""Peak memory of a streamed fit stays flat as the data grows; loading the data does not.

For each size (``--rows`` times each of ``--factors``) the demo problem is written as
parquet, then two fresh processes measure their peak resident set size (RSS, from
``getrusage``):

- ``streamed fit``: ``AdditiveSVC(...).fit(open_dataset(path))``, after the same fit on a
  small file that imports the readers and loads the compiled kernels, so the growth is what
  streaming more rows costs;
- ``load all``: reading the whole dataset into one float32 numpy matrix, as an in-memory
  learner would have to, for comparison.

The streamed fit holds ``prefetch + 1`` chunks (``--chunk-rows``) and the model, whatever
the number of rows.

    python examples/memory_usage.py --rows 250000 --factors 1,4,16
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

MIB = 2**20


def peak_rss_mib() -> float:
    """Peak resident set size of this process so far, in MiB (Linux reports KiB)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1024 if sys.platform != "darwin" else peak / MIB


def measure_streamed_fit(path: str, warmup: str, chunk_rows: int) -> dict[str, float]:
    """Peak RSS before and after a streamed fit over ``path`` (run in a fresh process)."""
    import streamlearn as sl
    from streamlearn.models.additive import AdditiveSVC

    def fit(data: str) -> AdditiveSVC:
        dataset = sl.open_dataset(data, target="label", chunk_rows=chunk_rows)
        # one epoch, exactly (tol=None: no stopping rule, so no warning at the cap): the
        # memory of a pass does not depend on how many are run
        return AdditiveSVC(embedding="bspline", n_bases=10, epochs=1, tol=None,
                           random_state=0, progress=False).fit(dataset)

    fit(warmup)  # imports and compiled kernels: their memory does not depend on the rows
    before = peak_rss_mib()
    fitted = fit(path)
    return {"before_mib": before, "peak_mib": peak_rss_mib(), "rows": fitted.n_train_}


def measure_load_all(path: str) -> dict[str, float]:
    """Peak RSS before and after reading every row into one float32 matrix."""
    import numpy as np
    import pyarrow.dataset as pads

    before = peak_rss_mib()
    table = pads.dataset(path).to_table()
    X = np.column_stack([table[c].to_numpy() for c in table.column_names if c != "label"])
    X = X.astype(np.float32)
    return {"before_mib": before, "peak_mib": peak_rss_mib(), "rows": X.shape[0]}


def run_child(mode: str, path: Path, warmup: Path, chunk_rows: int) -> dict[str, float]:
    """Run one measurement in a fresh process; its result."""
    out = subprocess.run([sys.executable, __file__, "--measure", mode, "--path", str(path),
                          "--warmup", str(warmup), "--chunk-rows", str(chunk_rows)],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=250_000, help="rows of the smallest size")
    parser.add_argument("--factors", default="1,4,16",
                        help="sizes as multiples of --rows, comma-separated")
    parser.add_argument("--chunk-rows", type=int, default=16_384, help="rows per chunk")
    parser.add_argument("--measure", choices=("stream", "load"), help=argparse.SUPPRESS)
    parser.add_argument("--path", help=argparse.SUPPRESS)
    parser.add_argument("--warmup", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:  # a measuring child process: print one JSON line
        result = (measure_streamed_fit(args.path, args.warmup, args.chunk_rows)
                  if args.measure == "stream"
                  else measure_load_all(args.path))
        print(json.dumps(result))
        return

    from streamlearn.data.synthetic import DEMO_FEATURES, write_additive_parquet

    sizes = [args.rows * int(f) for f in args.factors.split(",")]
    print(f"{'rows':>12} {'features MiB':>13} {'streamed fit: peak RSS':>23} "
          f"{'growth':>7} {'load all: peak RSS':>19} {'growth':>7}   (MiB)")
    rows_out = []
    with tempfile.TemporaryDirectory() as tmp:
        warmup = write_additive_parquet(Path(tmp) / "warmup", 1_000, n_files=1, seed=1)
        for n in sizes:
            path = write_additive_parquet(Path(tmp) / f"rows-{n}", n, n_files=2,
                                          row_group_rows=min(n, 65_536))
            stream = run_child("stream", path, warmup, args.chunk_rows)
            load = run_child("load", path, warmup, args.chunk_rows)
            data_mib = n * DEMO_FEATURES * 4 / MIB
            s_growth = stream["peak_mib"] - stream["before_mib"]
            l_growth = load["peak_mib"] - load["before_mib"]
            rows_out.append((data_mib, s_growth, l_growth))
            print(f"{n:>12,} {data_mib:>13.1f} {stream['peak_mib']:>23.1f} {s_growth:>7.1f} "
                  f"{load['peak_mib']:>19.1f} {l_growth:>7.1f}")
    (d0, s0, l0), (d1, s1, l1) = rows_out[0], rows_out[-1]
    print(f"from the smallest to the largest size the data grew by {d1 - d0:.1f} MiB: "
          f"peak RSS of the streamed fit grew by {s1 - s0:.1f} MiB, "
          f"of loading it all by {l1 - l0:.1f} MiB")


if __name__ == "__main__":
    main()
