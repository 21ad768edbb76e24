"""``streamlearn train --workers N`` and ``--scheduler ADDRESS``: the fit runs on dask."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner, Result
from sklearn.linear_model import LogisticRegression

from streamlearn import cli as cli_module
from streamlearn.cli import cli
from streamlearn.data.synthetic import additive_problem, write_additive_parquet
from streamlearn.models import AdditiveSVC

N_TRAIN = 12_000


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


@pytest.fixture(scope="module")
def problem(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray, np.ndarray,
                                                              float]:
    """Training parquet (4 files), held-out rows, and a linear model's held-out accuracy."""
    root = tmp_path_factory.mktemp("cli-dask")
    data = write_additive_parquet(root / "train.parquet", N_TRAIN, n_files=4,
                                  row_group_rows=1500, seed=11)
    X_test, y_test = additive_problem(4000, seed=12)
    X_train, y_train = additive_problem(N_TRAIN, seed=11)
    linear = LogisticRegression(max_iter=500).fit(X_train, y_train).score(X_test, y_test)
    return data, X_test, y_test, float(linear)


def held_out_accuracy(model_path: Path, X: np.ndarray, y: np.ndarray) -> float:
    columns = [f"x{j}" for j in range(X.shape[1])]  # the training parquet's names
    return float(np.mean(AdditiveSVC.load(model_path).predict(pd.DataFrame(X, columns=columns))
                         == y))


def test_workers_trains_on_a_local_cluster(problem, tmp_path: Path) -> None:
    data, X_test, y_test, linear = problem
    out = tmp_path / "m.slm"
    result = run("train", str(data), "-t", "label", "-m", "additive", "--workers", "1",
                 "--epochs", "3", "--seed", "0", "-o", str(out), "-q")
    assert result.exit_code == 0, result.output
    assert "engine   : dask LocalCluster of 1 worker process (1 threads)" in result.output
    # an additive model beats the best linear one on this problem
    assert held_out_accuracy(out, X_test, y_test) > linear + 0.05


def test_ctrl_c_stops_a_local_cluster_without_a_traceback_from_each_worker(
        problem, tmp_path: Path) -> None:
    """Ctrl-C in a terminal sends SIGINT to the whole process group, the workers of
    ``--workers`` included: only the command reacts, and closes the cluster."""
    data = problem[0]
    # started as a terminal starts a command: SIGINT at its default action and unblocked.
    # A child keeps an ignored SIGINT across exec, and Python then installs no handler:
    # started from a process whose SIGINT is ignored, the command trained on after SIGINT
    # (as three suite runs saw; which test leaves a worker so was not found)
    handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    mask = signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlearn.cli", "train", str(data), "-t", "label",
             "-m", "additive", "--workers", "1", "--epochs", "5000", "-p", "tol=null", "-o",
             str(tmp_path / "m.slm")],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
            # faulthandler: a command still running after SIGINT prints each thread's place
            env={**os.environ, "STREAMLEARN_PROGRESS": "1", "PYTHONFAULTHANDLER": "1"})
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        signal.signal(signal.SIGINT, handler)
    stderr = bytearray()
    fitting = threading.Event()

    def read() -> None:
        while chunk := proc.stderr.read1(4096):
            stderr.extend(chunk)
            if b"rows" in stderr:  # a progress bar: the cluster and its workers are up
                fitting.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    stopped = False
    try:
        assert fitting.wait(timeout=300), stderr.decode(errors="replace")
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=60)
            stopped = True
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGABRT)  # faulthandler's tracebacks, then the end
            proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    reader.join(timeout=60)
    text = stderr.decode(errors="replace")
    assert stopped, f"still running 60 s after SIGINT:\n{text[-20000:]}"
    assert proc.returncode == 1 and "Aborted!" in text, text
    assert "KeyboardInterrupt" not in text and "Dask Worker process" not in text, text
    assert not (tmp_path / "m.slm").exists()


def test_scheduler_trains_on_an_existing_cluster(problem, dask_client, tmp_path: Path) -> None:
    from distributed import get_task_stream

    data, X_test, y_test, linear = problem
    out = tmp_path / "m.slm"
    address = dask_client.scheduler.address
    with get_task_stream(client=dask_client) as tasks:
        result = run("train", str(data), "-t", "label", "-m", "additive", "--scheduler",
                     address, "--epochs", "3", "--seed", "0", "-o", str(out), "-q")
    assert result.exit_code == 0, result.output
    n_workers = len(dask_client.scheduler_info()["workers"])
    assert f"engine   : dask cluster at {address}, {n_workers} workers" in result.output
    keys = [str(t["key"]) for t in tasks.data]
    parts = [k for k in keys if k.startswith("streamlearn-") and "-part-" in k]
    # the describe pass, 3 epochs, calibration and the training score ran as cluster tasks
    assert len({k.rsplit("-part-", 1)[0] for k in parts}) >= 5, keys
    assert held_out_accuracy(out, X_test, y_test) > linear + 0.05
    # the command leaves the existing cluster running
    assert len(dask_client.scheduler_info()["workers"]) == n_workers


def test_cluster_options_usage_and_connection_errors(problem, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    data = str(problem[0])
    out = tmp_path / "m.slm"
    both = run("train", data, "-t", "label", "-m", "additive", "--workers", "1",
               "--scheduler", "tcp://127.0.0.1:9", "-o", str(out))
    assert both.exit_code == 2 and "give only one of them" in both.output
    zero = run("train", data, "-t", "label", "-m", "additive", "--workers", "0", "-o", str(out))
    assert zero.exit_code == 2 and "--workers" in zero.output
    monkeypatch.setattr(cli_module, "CONNECT_TIMEOUT", 1)
    unreachable = run("train", data, "-t", "label", "-m", "additive", "--scheduler",
                      "tcp://127.0.0.1:9", "-o", str(out))
    assert unreachable.exit_code == 1
    assert "cannot start or reach scheduler tcp://127.0.0.1:9" in unreachable.output
    assert not out.exists()
