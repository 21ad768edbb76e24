"""Kernels compiled ahead in a second process: the same kernels a fit calls, loaded from
the cache the second process fills, and nothing started where nothing is needed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np

from streamlearn.solvers import compile_ahead as ahead


def run_python(code: str, **env: str) -> dict:
    """Run ``code`` in a fresh interpreter with ``env`` added; it prints one JSON line."""
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)],
                         env={**os.environ, **env}, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


#: A default AdditiveSVC fit of three classes, after the calls it hands on have been
#: compiled in this process: the signature count of each of their kernels after each step.
SAME_TYPES = """
    import json, warnings
    import numpy as np
    from streamlearn.models import AdditiveSVC
    from streamlearn.features import BSplineMap
    from streamlearn.solvers.additive import driver
    from streamlearn.solvers.compile_ahead import compile_calls

    handed = []
    driver.compile_ahead = handed.extend  # record what the fit hands on, start nothing
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1500, 4)).astype(np.float32)
    y = np.digitize(np.sin(2 * X[:, 0]) + X[:, 1] ** 2, [-0.3, 0.9])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first = AdditiveSVC(random_state=0)
        first.fit(X, y)
    calls, seen = [], set()
    for call in handed:  # the first call of each kernel, as compile_ahead keeps them
        if call.key() not in seen:
            seen.add(call.key())
            calls.append(call)
    kernels = [call.family()(*call.arrays()[:2], False) for call in calls]
    before = [len(k.signatures) for k in kernels]
    compile_calls(calls)
    after_warm = [len(k.signatures) for k in kernels]
    print(json.dumps({"calls": [c.kernel + ":" + c.key()[1].name for c in calls],
                      "before": before, "after_warm": after_warm,
                      "linear": first.linear_check_}))
"""


def test_the_calls_compile_the_signatures_the_fit_itself_calls():
    # compiling a handed call after the fit adds no signature: the fit's own calls
    # compiled the same types, so a second process's kernels are the ones it loads
    got = run_python(SAME_TYPES)
    assert got["calls"] == ["decision_ovr:bspline_dense_d1_o0", "pegasos_ovr:linear_dense_d0_o0",
                            "decision_ovr:linear_dense_d0_o0"]
    assert got["linear"] is not None  # the linear model was trained: its kernels ran
    assert got["before"] == [1, 1, 1]
    assert got["after_warm"] == got["before"]


#: compile_ahead on a new cache: the second process compiles the kernel, this one loads it.
CACHE_FILLED = """
    import json, time
    import numpy as np
    from streamlearn.solvers import compile_ahead as ahead
    from streamlearn.solvers.embedding import decision_ovr_chunk, embedding_params

    emb = embedding_params(None, 3)
    call = ahead.KernelCall.of("decision_ovr", emb, 2)
    cached_before = ahead.is_cached(call)
    process = ahead.compile_ahead([call])
    again = ahead.compile_ahead([call])  # handed already: not started twice
    code = process.wait(timeout=240)
    cached_after = ahead.is_cached(call)
    kernel = call.family()(*call.arrays()[:2], False)
    X = np.arange(6, dtype=np.float32).reshape(2, 3)
    W = np.array([[1.0, 2.0, 3.0, 0.5], [0.0, -1.0, 0.0, 0.0]])
    scores = decision_ovr_chunk(X, W, 2.0, *emb)
    print(json.dumps({"before": cached_before, "after": cached_after, "code": code,
                      "again": again is None, "hits": sum(kernel.stats.cache_hits.values()),
                      "misses": sum(kernel.stats.cache_misses.values()), "scores": scores.tolist(),
                      "reference": (X @ W[:, :3].T + 2.0 * W[:, 3]).tolist()}))
"""


def test_a_second_process_fills_the_cache_that_this_one_loads(tmp_path):
    got = run_python(CACHE_FILLED, NUMBA_CACHE_DIR=str(tmp_path),
                     STREAMLEARN_COMPILE_AHEAD="1")
    assert got["code"] == 0
    assert not got["before"] and got["after"]
    assert got["again"]
    assert got["hits"] == 1 and got["misses"] == 0  # loaded, not compiled here
    np.testing.assert_allclose(got["scores"], got["reference"], rtol=1e-6)


def test_nothing_starts_when_turned_off_or_cached(monkeypatch):
    from streamlearn.solvers.embedding import embedding_params

    call = ahead.KernelCall.of("decision_ovr", embedding_params(None, 3), 1)
    monkeypatch.setenv(ahead.ENV, "0")
    assert not ahead.enabled()
    assert ahead.compile_ahead([call]) is None
    monkeypatch.setenv(ahead.ENV, "1")
    monkeypatch.setattr(ahead, "is_cached", lambda call: True)
    assert ahead.compile_ahead([call]) is None


def test_kernel_calls_travel_as_json():
    from streamlearn.features import BSplineMap
    from streamlearn.solvers.embedding import embedding_params

    fmap = BSplineMap(degree=1, n_bases=8, penalty_order=1).fit([-1.0, 0.0, 2.0],
                                                                [1.0, 0.5, 3.25])
    call = ahead.KernelCall.of("pegasos_ovr", embedding_params(fmap, 3), 4)
    item = json.loads(json.dumps([call.__dict__]))[0]
    back = ahead.KernelCall(item["kernel"], item["kind"], tuple(item["ipar"]),
                            tuple(item["fpar"]), item["n_models"])
    assert back == call
    _kind, ipar, fpar = back.arrays()
    assert ipar.dtype == np.int64 and fpar.dtype == np.float64
    np.testing.assert_array_equal(fpar, embedding_params(fmap, 3)[2])
