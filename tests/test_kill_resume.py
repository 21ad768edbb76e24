"""Every model: a fit killed with SIGKILL anywhere and run again ends with the same model.

Each model of ``tests/killable_fit.py`` is fitted with a checkpoint in processes (forked
from one serving interpreter) that kill themselves at the points listed below
(``HOW:PASS:N:WHICH``, see :class:`tests.killable_fit.Kill`): in a reduction pass, after a
write inside a sequential pass (so the next process resumes in the middle of it, with the
per-row dual variables it saved), and half-way through writing a progress or a result file.
Every kill must leave a checkpoint further on than the one before. A new interpreter then
finishes the fit and is killed half-way through saving the model (the model file must not
appear), and a last process, which replays the finished checkpoint, must exit 0 with the
model file an uninterrupted fit in this process saves, byte for byte in every array.

Every model is bit-reproducible: its passes are deterministic given ``random_state`` (chunk
orders, coordinate orders and samples are seeded from it), no kernel runs in parallel, and
a pass state saved mid-pass is restored exactly (arrays as ``.npy``, floats as JSON
``repr``), so the resumed pass adds the same numbers in the same order.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from streamlearn.engine.checkpoint import checkpoint_progress
from streamlearn.io.model_file import read_model_file
from tests.killable_fit import fit

ROOT = Path(__file__).resolve().parents[1]

#: Where the processes of each fit die, in the order they are run (600 rows in 6 chunks a
#: pass, a progress write every 2 chunks).
KILLS = {
    # describe, 2 dual coordinate descent epochs (sequential), calibration
    "AdditiveSVC": ["after:SummaryPass:1:4", "after:DcdEpochPass:2:2",
                    "during:CalibrationPass:1:result"],
    # k-means, cluster counts, 2 initial expert passes, an E-step and 2 stochastic EM
    # epochs, every pass for the 3 one-vs-rest mixtures at both gating factors and the
    # guard's 3 linear lanes at once (the experts' passes sequential, each lane with its
    # own dual variables), the held-out scores that choose the factor, the guard's scores
    # of the mixture and the linear SVM, the temperatures; then the same passes for the 3
    # one-vs-one pair mixtures that multiclass="auto" tries, and the held-out scores that
    # compare the two schemes (the 4th held-out scores pass)
    "MixtureSVC": ["during:MiniBatchKMeansPass:2:4", "after:InitialExpertPass:2:2",
                   "after:StochasticEpochPass:2:4", "after:InitialExpertPass:4:2",
                   "during:StochasticEpochPass:4:4", "during:HeldOutScoresPass:4:result"],
    # describe, anchor k-means (sequential), then restricted objectives and column scores
    "ShareBoostClassifier": ["after:MiniBatchKMeansPass:1:2",
                             "during:RestrictedObjectivePass:3:end"],
    # reductions only: moments, then a spline or histogram scan per candidate direction
    "SparsePPRRegressor": ["after:SplineScanPass:2:2", "during:SplineScanPass:4:result"],
    "SparseJSBoostClassifier": ["after:HistogramScanPass:2:4",
                                "during:HistogramScanPass:4:result"],
    # k-means init, then mini-batch epochs (sequential) for 4, then 2 prototypes, then the
    # squared hinge refit's Newton passes (reductions)
    "SuperSparseClassifier": ["after:MiniBatchKMeansPass:1:4", "during:MiniBatchPass:3:4",
                              "during:HingeGramPass:2:4"],
    # batch solver: Gram and gradient reductions; killed once the result file is in place
    # but before the progress file counts it
    "SuperSparseRegressor": ["during:GramPass:2:2", "after:GradientPass:2:result"],
}


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "STREAMLEARN_PROGRESS": "0"}


@pytest.fixture(scope="module")
def forked_fit(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., int]]:
    """``forked_fit(*argv)``: exit code of ``python -m tests.killable_fit *argv``, forked."""
    log = tmp_path_factory.mktemp("server") / "stderr.txt"
    with open(log, "w") as err:
        server = subprocess.Popen([sys.executable, "-m", "tests.killable_fit", "--serve"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                                  text=True, cwd=ROOT, env=_env())
    assert server.stdin is not None and server.stdout is not None

    def run(*argv: object) -> int:
        server.stdin.write(json.dumps([str(a) for a in argv]) + "\n")
        server.stdin.flush()
        ready, _, _ = select.select([server.stdout], [], [], 300)
        line = server.stdout.readline() if ready else ""
        if not line:
            raise AssertionError(f"no answer for {argv}; stderr:\n{log.read_text()[-3000:]}")
        return int(json.loads(line)["returncode"])

    yield run
    server.stdin.close()
    server.wait(timeout=60)


def _assert_same_model_file(got: Path, want: Path) -> None:
    got_header, got_arrays = read_model_file(got)
    want_header, want_arrays = read_model_file(want)
    assert got_header["metadata"] == want_header["metadata"]
    assert set(got_arrays) == set(want_arrays)
    for name, array in want_arrays.items():
        np.testing.assert_array_equal(got_arrays[name], array, err_msg=name)
        assert got_arrays[name].dtype == array.dtype, name
    assert got_header["arrays"] == want_header["arrays"]  # checksums of the .npy bytes


@pytest.mark.parametrize("name", sorted(KILLS))
def test_sigkilled_fit_resumes_to_the_same_model(name: str, tmp_path: Path,
                                                 forked_fit: Callable[..., int]) -> None:
    checkpoint, out = tmp_path / "checkpoint", tmp_path / "model.slm"
    progress = [(0, 0)]
    for kill in KILLS[name]:
        code = forked_fit(name, checkpoint, out, "--kill", kill)
        assert code == -signal.SIGKILL, f"{kill}: exit code {code} (0: the fit never got there)"
        progress.append(checkpoint_progress(checkpoint))
        assert progress[-1] > progress[-2], (kill, progress)
    # a new interpreter, which owes nothing to the forking one, finishes the fit, and is
    # killed half-way through saving it: no model file, only the temporary one beside it
    fresh = subprocess.run([sys.executable, "-m", "tests.killable_fit", name, str(checkpoint),
                            str(out), "--kill", "during:save"], cwd=ROOT, env=_env(),
                           capture_output=True, text=True, timeout=300)
    assert fresh.returncode == -signal.SIGKILL, fresh.stderr
    assert not out.exists() and len(list(tmp_path.glob(".model.slm.*.tmp"))) == 1
    assert checkpoint_progress(checkpoint) > progress[-1]
    assert forked_fit(name, checkpoint, out) == 0  # replays the finished checkpoint
    fit(name).save(tmp_path / "reference.slm")
    _assert_same_model_file(out, tmp_path / "reference.slm")
    assert not list(checkpoint.rglob("*.tmp"))
    for bundle in checkpoint.rglob("*.zip"):
        with zipfile.ZipFile(bundle) as zf:
            assert zf.testzip() is None, bundle
