"""Kernels compiled ahead in a second process: the same kernels a fit calls, loaded from
the cache the second process fills, and nothing started where nothing is needed."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from streamlearn.solvers import compile_ahead as ahead


def run_python(code: str, args: tuple[str, ...] = (), **env: str) -> dict:
    """Run ``code`` in a fresh interpreter with ``args`` and ``env`` added; it prints one
    JSON line."""
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args],
                         env={**os.environ, **env}, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


#: A default fit of ``MODEL`` on three classes, then the calls it handed on compiled in the
#: same process: the signature count of each call's kernel before and after.
SAME_TYPES = """
    import json, sys, warnings
    import numpy as np
    import streamlearn.models as models
    from streamlearn.solvers.compile_ahead import compile_calls

    name = sys.argv[1]
    driver = __import__(f"streamlearn.solvers.{sys.argv[2]}.driver", fromlist=["x"])
    handed = []
    driver.compile_ahead = handed.extend  # record what the fit hands on, start nothing
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1500, 4)).astype(np.float32)
    y = np.digitize(np.sin(2 * X[:, 0]) + X[:, 1] ** 2, [-0.3, 0.9])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        getattr(models, name)(random_state=0, **json.loads(sys.argv[3])).fit(X, y)
    calls, seen = [], set()
    for call in handed:  # the first call of each kernel, as compile_ahead keeps them
        if call.key() not in seen:
            seen.add(call.key())
            calls.append(call)
    before = [len(call.dispatcher().signatures) for call in calls]
    compile_calls(calls)
    after = [len(call.dispatcher().signatures) for call in calls]
    names = [":".join([call.kernel, *(getattr(k, "name", "") for k in call.key()[1:])])
             for call in calls]
    print(json.dumps({"calls": names, "before": before, "after": after,
                      "handed": [call.__dict__ for call in calls]}))
"""

#: The handed calls alone, compiled as the second process compiles them.
HANDED_ONLY = """
    import json, sys
    from streamlearn.solvers.compile_ahead import KernelCall, compile_calls

    compile_calls([KernelCall(item["kernel"], tuple(item["ints"]), tuple(item["floats"]))
                   for item in json.loads(sys.argv[1])])
    print("{}")
"""


def saved_versions(cache: Path) -> dict[str, set[str]]:
    """The keys of every function's saved versions in a numba cache directory."""
    versions = {}
    for index in cache.rglob("*.nbi"):
        with open(index, "rb") as fh:
            pickle.load(fh)  # numba's version
            _, overloads = pickle.loads(fh.read())
        versions[index.name] = {repr(key) for key in overloads}
    return versions



@pytest.mark.parametrize(("model", "package", "params", "kernels", "new_caches"), [
    ("AdditiveSVC", "additive", {}, ["decision_ovr:bspline_dense_d1_o0",
                                     "pegasos_ovr:linear_dense_d0_o0",
                                     "decision_ovr:linear_dense_d0_o0"], True),
    ("MixtureSVC", "mixture", {}, ["mixture_posteriors", "mixture_log_odds",
                                   "mixture_gating_terms"], True),
    # the signatures only (the cache check compiles a whole fit from nothing: defaults)
    ("AdditiveSVC", "additive", {"solver": "dcd"}, ["decision_ovr:bspline_dense_d1_o0",
                                                    "embedding_sum:linear_dense_d0_o0",
                                                    "dcd_ovr:linear_dense_d0_o0",
                                                    "decision_ovr:linear_dense_d0_o0"], False),
])
def test_the_calls_compile_the_signatures_the_fit_itself_calls(model, package, params,
                                                               kernels, new_caches, tmp_path):
    # compiling a handed call after the fit adds no signature: the fit's own calls
    # compiled the same types, so the second process's kernels are the ones it loads
    fit_cache, handed_cache = tmp_path / "fit", tmp_path / "handed"
    caches = {"NUMBA_CACHE_DIR": str(fit_cache)} if new_caches else {}
    got = run_python(SAME_TYPES, args=(model, package, json.dumps(params)), **caches)
    assert got["calls"] == kernels
    assert got["before"] == [1] * len(kernels)  # the fit called each kernel (its types)
    assert got["after"] == got["before"]
    if not new_caches:
        return
    # every function the second process saves, it saves in the versions the fit saves:
    # no helper of two signatures, one from each process, can share a cache entry
    run_python(HANDED_ONLY, args=(json.dumps(got["handed"]),),
               NUMBA_CACHE_DIR=str(handed_cache))
    fit, handed = saved_versions(fit_cache), saved_versions(handed_cache)
    assert handed and set(handed) <= set(fit)
    assert {name: fit[name] for name in handed} == handed


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
    kernel = call.dispatcher()
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
    monkeypatch.setattr(ahead.os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert not ahead.enabled()  # one core: nothing to compile on beside the fit
    monkeypatch.setattr(ahead.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert ahead.enabled()
    monkeypatch.setattr(ahead.sys, "frozen", True, raising=False)
    assert not ahead.enabled()  # a frozen application: no interpreter to start
    monkeypatch.delattr(ahead.sys, "frozen")
    monkeypatch.setattr(ahead, "is_cached", lambda call: True)
    assert ahead.compile_ahead([call]) is None


def test_kernel_calls_travel_as_json():
    from streamlearn.features import BSplineMap
    from streamlearn.solvers.embedding import embedding_params

    fmap = BSplineMap(degree=1, n_bases=8, penalty_order=1).fit([-1.0, 0.0, 2.0],
                                                                [1.0, 0.5, 3.25])
    emb = embedding_params(fmap, 3)
    for call in (ahead.KernelCall.of("pegasos_ovr", emb, 4),
                 ahead.KernelCall("mixture_log_odds", (3, 5))):
        item = json.loads(json.dumps([call.__dict__]))[0]
        back = ahead.KernelCall(item["kernel"], tuple(item["ints"]), tuple(item["floats"]))
        assert back == call and back.key() == call.key()
    kind, m, ipar, fpar = ahead._embedding(ahead.KernelCall.of("pegasos_ovr", emb, 4))
    assert (kind, m) == (int(emb[0]), 4)
    assert ipar.dtype == np.int64 and fpar.dtype == np.float64
    np.testing.assert_array_equal(ipar, emb[1])
    np.testing.assert_array_equal(fpar, emb[2])
