#!/usr/bin/env bash
# The streamlearn command line: train, predict and evaluate, each streaming its data.
#
# Writes the demo problem as parquet (a training and a test directory, and new rows
# without labels), then runs
#   streamlearn train     DATA --target label ...    fit and save a model file
#   streamlearn train     ... --search C=0.1,1,10    the same, tuned inside the stream
#   streamlearn predict   MODEL DATA --out FILE      predictions streamed to parquet
#   streamlearn evaluate  MODEL DATA --target label  accuracy, log-loss, confusion matrix
# Needs the `streamlearn` command on PATH (activate the virtualenv first).
#
#   bash examples/command_line.sh --rows 200000
set -euo pipefail

rows=200000
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rows) rows="$2"; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown option: $1 (options: --rows N)" >&2; exit 2 ;;
  esac
done

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"

python - "$rows" <<'PY'
import sys

import pyarrow as pa
import pyarrow.parquet as pq

from streamlearn.data.synthetic import additive_problem, write_additive_parquet

rows = int(sys.argv[1])
write_additive_parquet("train", rows, n_files=4, row_group_rows=16_384, seed=0)
write_additive_parquet("test", max(rows // 4, 1000), n_files=1, row_group_rows=16_384, seed=1)
X, _ = additive_problem(10, seed=2)  # new rows: features only
pq.write_table(pa.table({f"x{j}": X[:, j] for j in range(X.shape[1])}), "new.parquet")
PY

echo "== streamlearn train"
streamlearn train train --target label --model additive --seed 0 \
  --param n_bases=12 --out model.slm --no-train-score

echo "== streamlearn train --search (C and the bases tuned inside the stream)"
streamlearn train train --target label --model additive --seed 0 \
  --search C=0.1,1,10 --search n_bases=8,16 --out tuned.slm --no-train-score --quiet

echo "== streamlearn predict"
streamlearn predict model.slm new.parquet --out predictions.parquet --proba --row-index --quiet
python -c "import pandas as pd; print(pd.read_parquet('predictions.parquet').head(5).to_string())"

echo "== streamlearn evaluate"
streamlearn evaluate model.slm test --target label
