"""A Ctrl-C that Python drops inside a finalizer still stops the fit, at the next pass."""

from __future__ import annotations

import signal
import threading

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

from streamlearn.engine import LocalEngine
from streamlearn.engine.interrupts import interrupts_noted, raise_noted_interrupt
from streamlearn.models import AdditiveSVC, StreamSearchCV

#: the interrupts these tests drop are printed by Python, and reported by pytest
pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")


class DropsAnInterrupt:
    """Sends SIGINT to this process from its finalizer: Python runs the handler there, and
    prints and drops the ``KeyboardInterrupt`` it raises ("Exception ignored in ...")."""

    def __del__(self) -> None:
        signal.raise_signal(signal.SIGINT)


@pytest.fixture()
def python_handler():
    """Python's own SIGINT handler in place, whatever the test runner set."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


@pytest.fixture()
def problem() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 3)).astype(np.float32)
    return X, (X[:, 0] + X[:, 1] ** 2 > 0.5).astype(int)


def passes_dropping_an_interrupt(monkeypatch: pytest.MonkeyPatch, at: int) -> list[int]:
    """Make the engine's ``at``-th pass start with an interrupt dropped by a finalizer; the
    list of passes started (returned) grows as the fit goes."""
    started: list[int] = []
    run = LocalEngine.run

    def dropping(self, *args, **kwargs):
        started.append(len(started) + 1)
        if len(started) == at:
            DropsAnInterrupt()  # collected here: its KeyboardInterrupt is dropped
        return run(self, *args, **kwargs)

    monkeypatch.setattr(LocalEngine, "run", dropping)
    return started


def test_python_drops_a_keyboard_interrupt_raised_in_a_finalizer(python_handler) -> None:
    DropsAnInterrupt()  # no exception reaches here: what the module works around
    raise_noted_interrupt()  # noted only while a fit runs


def test_an_interrupt_a_finalizer_dropped_stops_the_fit_at_the_next_pass(
        python_handler, problem, monkeypatch: pytest.MonkeyPatch) -> None:
    X, y = problem
    started = passes_dropping_an_interrupt(monkeypatch, at=2)
    model = AdditiveSVC(epochs=5, random_state=0)
    with pytest.raises(KeyboardInterrupt):
        model.fit(X, y)
    assert started == [1, 2]  # the second pass raised it as it started
    with pytest.raises(NotFittedError):
        model.predict(X)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    raise_noted_interrupt()  # the note went with the fit: nothing left to raise
    # the next fit runs to its end
    monkeypatch.undo()
    signal.signal(signal.SIGINT, signal.default_int_handler)
    assert model.fit(X, y).score(X, y) > 0.8


def test_a_search_stops_too(python_handler, problem, monkeypatch: pytest.MonkeyPatch) -> None:
    # the race's passes and its candidates' fits run inside the search's own block
    X, y = problem
    started = passes_dropping_an_interrupt(monkeypatch, at=3)
    search = StreamSearchCV(AdditiveSVC(epochs=3, random_state=0), {"C": [0.1, 1.0]},
                            random_state=0)
    with pytest.raises(KeyboardInterrupt):
        search.fit(X, y)
    assert started == [1, 2, 3]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_nothing_changes_where_sigint_is_not_pythons_to_handle(python_handler) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # as in a dask worker
    with interrupts_noted():
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    seen = []

    def other_thread() -> None:
        with interrupts_noted():
            seen.append(signal.getsignal(signal.SIGINT))

    signal.signal(signal.SIGINT, signal.default_int_handler)
    thread = threading.Thread(target=other_thread)
    thread.start()
    thread.join()
    assert seen == [signal.default_int_handler]


def test_a_handler_the_block_set_is_left_in_place(python_handler) -> None:
    def own(signum, frame) -> None:
        pass

    with interrupts_noted():
        assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler
        signal.signal(signal.SIGINT, own)
    assert signal.getsignal(signal.SIGINT) is own
