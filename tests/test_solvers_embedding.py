"""On-the-fly embedding for solvers: encode_row, row_sq_norm, decision_chunk against transform."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from numba import njit
from scipy.linalg import block_diag

from streamlearn.data.sparse_rows import SparseRows
from streamlearn.features import BSplineMap, FourierMap, HermiteMap, difference_matrix
from streamlearn.solvers.embedding import (
    BSPLINE,
    FOURIER,
    HERMITE,
    LINEAR,
    KernelSpec,
    decision_chunk,
    dense_score,
    dense_step_pair_score,
    dense_step_score,
    embed_term_major,
    embedded_sq_norm,
    embedding_params,
    encode_row,
    encodes_sparse_rows,
    every_column,
    from_term_major,
    kernel_spec,
    model_sq_norm,
    row_sq_norm,
    term_major_buffers,
    term_major_columns,
    to_term_major,
    weights_from_w_d,
)

N_FEATURES = 3


def make_X(n: int = 40, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    X = rng.uniform(-0.2, 2.2, (n, N_FEATURES)).astype(np.float32)
    X[rng.random(X.shape) < 0.2] = 0.0
    return X


def fitted_maps():
    lo, hi = np.zeros(N_FEATURES), np.full(N_FEATURES, 2.0)
    mean, std = np.full(N_FEATURES, 1.0), np.full(N_FEATURES, 0.7)
    return [
        None,
        BSplineMap(3, 10, 1).fit(lo, hi),
        BSplineMap(1, 8, 0).fit(lo, hi),
        BSplineMap(2, 9, 2, zero_preserving=True).fit(lo, hi),
        BSplineMap(3, 7, 1, zero_preserving=True).fit(lo, hi),
        FourierMap(3, 2).fit(lo, hi),
        FourierMap(2, 1, zero_preserving=True).fit(lo, hi),
        HermiteMap(3, 1, clip=3.0).fit(mean, std),
        HermiteMap(2, 2, zero_preserving=True).fit(mean, std),
    ]


MAPS = fitted_maps()
IDS = [repr(m) for m in MAPS]


def dense(m, X: np.ndarray) -> np.ndarray:
    return X.astype(np.float64) if m is None else m.transform(X).astype(np.float64)


def d_matrix(m, n_features: int = N_FEATURES) -> np.ndarray:
    """Block-diagonal D_d with w = D_d w_d (the identity for every kind but B-splines)."""
    if isinstance(m, BSplineMap):
        return block_diag(*[difference_matrix(m.n_columns_per_feature, m.penalty_order)]
                          * n_features)
    n = n_features if m is None else m.n_output_features(n_features)
    return np.eye(n)


def encoded_phi(emb, X: np.ndarray) -> np.ndarray:
    """Rows of Phi scattered from encode_row."""
    idx = np.empty(emb.max_nnz, dtype=np.int32)
    val = np.empty(emb.max_nnz, dtype=np.float32)
    phi = np.zeros((X.shape[0], emb.n_dims))
    for r, row in enumerate(X):
        nnz = encode_row(emb.kind, row, emb.ipar, emb.fpar, idx, val)
        assert nnz <= emb.max_nnz
        np.add.at(phi[r], idx[:nnz], val[:nnz])
    return phi


def test_kinds():
    kinds = [embedding_params(m, N_FEATURES).kind for m in MAPS]
    assert kinds == [LINEAR, BSPLINE, BSPLINE, BSPLINE, BSPLINE, FOURIER, FOURIER, HERMITE,
                     HERMITE]


@pytest.mark.parametrize("m", MAPS, ids=IDS)
def test_encode_row_is_phi_of_the_transform(m):
    """Psi_d = D^-T Phi, so Phi^T = Psi_d^T D (D = I for every kind but B-splines)."""
    X = make_X()
    emb = embedding_params(m, N_FEATURES)
    phi = encoded_phi(emb, X)
    expected = dense(m, X) @ d_matrix(m)
    np.testing.assert_allclose(phi, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("m", MAPS, ids=IDS)
def test_scores_match_transform_product(m):
    X = make_X(seed=1)
    emb = embedding_params(m, N_FEATURES)
    rng = np.random.default_rng(2)
    w = rng.normal(size=emb.n_dims)
    w_d = np.linalg.solve(d_matrix(m), w)
    expected = dense(m, X) @ w + 0.25
    np.testing.assert_allclose(decision_chunk(X, w_d, 0.25, *emb), expected, rtol=2e-5, atol=2e-5)
    # w_d back to w, and ||w||^2 from w_d
    with_bias = np.append(w_d, 3.0)
    np.testing.assert_allclose(weights_from_w_d(with_bias, emb.ipar), np.append(w, 3.0),
                               rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(model_sq_norm(with_bias, emb.ipar), w @ w, rtol=1e-10)


@pytest.mark.parametrize("m", MAPS, ids=IDS)
def test_row_sq_norm_is_squared_norm_of_transform(m):
    X = make_X(seed=3)
    emb = embedding_params(m, N_FEATURES)
    idx = np.empty(emb.max_nnz, dtype=np.int32)
    val = np.empty(emb.max_nnz, dtype=np.float32)
    scratch = np.empty(emb.n_cols)
    expected = (dense(m, X) ** 2).sum(axis=1)
    got = [row_sq_norm(emb.kind, row, emb.ipar, emb.fpar, idx, val, scratch) for row in X]
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("m", MAPS, ids=IDS)
def test_embedded_sq_norm_adds_the_squared_norms_of_the_transform(m):
    X = make_X(seed=4)
    emb = embedding_params(m, N_FEATURES)
    expected = float((dense(m, X) ** 2).sum())
    assert embedded_sq_norm(X, *emb) == pytest.approx(expected, rel=1e-5)
    if emb.takes_sparse_rows:  # the same rows as CSR
        rows = SparseRows.from_scipy(sp.csr_array(X))
        assert embedded_sq_norm(rows, *emb) == pytest.approx(expected, rel=1e-5)


@pytest.mark.parametrize("m", [*MAPS, "pairs"], ids=[*IDS, "pairs"])
def test_step_offsets_materialised_sum_equals_the_kernels(m):
    """PEGASOS's step offset sums dense rows' squared norms from the map's transform, a
    block of rows at a time (materialised_sq_norm), and sparse rows' by the kernels."""
    from streamlearn.features import BSplinePairMap
    from streamlearn.solvers.additive.driver import SAMPLE_BLOCK_ROWS, materialised_sq_norm

    if m == "pairs":
        m = BSplinePairMap(degree=2, n_bases=8, penalty_order=1, interactions=[(0, 2), (1, 2)],
                           pair_bases=4).fit(np.zeros(N_FEATURES), np.full(N_FEATURES, 2.0))
    X = make_X(n=2 * SAMPLE_BLOCK_ROWS + 7, seed=6)
    X[3, 1] = np.nan  # counts as 0, as in the fit's describe sample
    kernel = embedded_sq_norm(np.nan_to_num(X), *embedding_params(m, N_FEATURES))
    assert materialised_sq_norm(m, X) == pytest.approx(kernel, rel=1e-6)


def test_zero_preserving_maps_skip_zero_rows():
    zero = np.zeros(N_FEATURES, dtype=np.float32)
    for m in MAPS:
        if m is not None and not m.zero_preserving:
            continue
        emb = embedding_params(m, N_FEATURES)
        idx = np.empty(emb.max_nnz, dtype=np.int32)
        val = np.empty(emb.max_nnz, dtype=np.float32)
        assert encode_row(emb.kind, zero, emb.ipar, emb.fpar, idx, val) == 0


def test_empty_chunk_and_parameter_checks():
    emb = embedding_params(None, 4)
    assert emb.n_dims == 4 and emb.order == 0
    assert decision_chunk(np.empty((0, 4), np.float32), np.zeros(4), 0.0, *emb).shape == (0,)
    with pytest.raises(ValueError, match="n_features"):
        embedding_params(None)
    with pytest.raises(RuntimeError, match="not fitted"):
        embedding_params(BSplineMap(3, 10, 1))
    with pytest.raises(ValueError, match="fitted on 3"):
        embedding_params(MAPS[1], 5)


def test_read_only_inputs_reuse_the_compiled_kernel():
    """Read-only rows and models (joblib's memmaps, unpickled models) give the same scores
    with the kernel already compiled for writeable ones, not a second compile."""
    from streamlearn.engine.compile_clock import CompileClock
    from streamlearn.solvers.embedding import decision_ovr_chunk

    m = BSplineMap(1, 8, 0, zero_preserving=True).fit(np.zeros(N_FEATURES),
                                                      np.full(N_FEATURES, 2.0))
    emb = embedding_params(m)
    X = make_X(30)
    W = np.random.default_rng(1).normal(size=(2, emb.n_dims + 1))
    reference = dense(m, X) @ W[:, :-1].T + W[:, -1]
    rows = SparseRows.from_scipy(sp.csr_array(X))
    for chunk in (X, rows):
        np.testing.assert_allclose(decision_ovr_chunk(chunk, W, 1.0, *emb), reference,
                                   rtol=1e-5, atol=1e-6)
    X_ro, W_ro = X.copy(), W.copy()
    rows_ro = SparseRows.from_scipy(sp.csr_array(X))
    for a in (X_ro, W_ro, rows_ro.indptr, rows_ro.indices, rows_ro.values, emb.ipar,
              emb.fpar):
        a.flags.writeable = False
    with CompileClock() as clock:
        for chunk in (X_ro, rows_ro):
            np.testing.assert_allclose(decision_ovr_chunk(chunk, W_ro, 1.0, *emb), reference,
                                       rtol=1e-5, atol=1e-6)
    assert clock.seconds == 0.0


def test_every_kernel_variant_has_a_cache_index_of_its_own():
    # numba numbers the compiled versions of one function name in one index file; variants
    # sharing it could swap code when two processes compile two of them at once
    from streamlearn.solvers.dcd import DCD_OVR, EMBEDDING_SUM
    from streamlearn.solvers.embedding import DECISION_OVR
    from streamlearn.solvers.pegasos import PEGASOS_OVR

    lo, hi = np.zeros(N_FEATURES), np.ones(N_FEATURES)
    maps = [embedding_params(None, N_FEATURES), embedding_params(FourierMap(3).fit(lo, hi)),
            embedding_params(FourierMap(3, zero_preserving=True).fit(lo, hi))]
    for degree in (1, 2, 3):
        for zero_preserving in (False, True):
            for order in (0, 1, 2):
                maps.append(embedding_params(
                    BSplineMap(degree, 6, order, zero_preserving).fit(lo, hi)))
    # specs: on dense rows linear, 2 variants of Fourier and 3 degrees x 2 variants of
    # B-splines, x 3 orders where the kernel updates w_d (21, or 9); on CSR rows linear
    # and the 3 degrees of zero-preserving B-splines, x 3 orders (10, or 4). The other
    # maps' CSR kernels are refused before they are made
    for kernels, n_specs in ((DCD_OVR, 31), (EMBEDDING_SUM, 31), (DECISION_OVR, 13),
                             (PEGASOS_OVR, 31)):
        made = {kernels(emb.kind, emb.ipar, sparse) for emb in maps for sparse in (False, True)
                if not sparse or encodes_sparse_rows(emb.kind, emb.ipar)}
        assert len(made) == n_specs
        refused = [emb for emb in maps if not encodes_sparse_rows(emb.kind, emb.ipar)]
        assert len(refused) == 2 + 9
        for emb in refused:
            with pytest.raises(ValueError, match="zero-preserving B-splines"):
                kernels(emb.kind, emb.ipar, True)
        every = list(kernels.kernels.values())  # with those other tests made before
        names = {k._cache._cache_file._index_name for k in every}
        assert len(names) == len(every)
        module = every[0].py_func.__module__.split(".")[-1]
        assert all(n.startswith(module) for n in names)


def test_kernel_specs_keep_apart_only_what_a_kernel_branches_on():
    from streamlearn.solvers.embedding import DECISION_OVR
    from streamlearn.solvers.pegasos import PEGASOS_OVR

    lo, hi = np.zeros(N_FEATURES), np.ones(N_FEATURES)

    def emb(**kw):
        return embedding_params(BSplineMap(n_bases=6, **kw).fit(lo, hi))

    d1o1, d1o2, d3o1 = emb(degree=1, penalty_order=1), emb(degree=1, penalty_order=2), \
        emb(degree=3, penalty_order=1)
    # the decision kernel does not touch w_d's penalty; PEGASOS updates it
    assert DECISION_OVR(*d1o1[:2], False) is DECISION_OVR(*d1o2[:2], False)
    assert PEGASOS_OVR(*d1o1[:2], False) is not PEGASOS_OVR(*d1o2[:2], False)
    assert DECISION_OVR(*d1o1[:2], False) is not DECISION_OVR(*d3o1[:2], False)
    z1 = emb(degree=1, penalty_order=1, zero_preserving=True)
    assert DECISION_OVR(*z1[:2], False) is not DECISION_OVR(*z1[:2], True)
    four = [embedding_params(FourierMap(k).fit(lo, hi)) for k in (2, 5)]
    assert kernel_spec(four[0].kind, four[0].ipar, False, True) == \
        kernel_spec(four[1].kind, four[1].ipar, False, True) == \
        KernelSpec(FOURIER, False, 0, False, 0)
    # the zero-preserving variant has an encoder of its own
    shifted = embedding_params(FourierMap(2, zero_preserving=True).fit(lo, hi))
    assert kernel_spec(shifted.kind, shifted.ipar, False, True) == \
        KernelSpec(FOURIER, False, 0, True, 0)
    spec = kernel_spec(d3o1.kind, d3o1.ipar, True, True)
    assert spec == KernelSpec(BSPLINE, True, 3, False, 1)
    assert spec.name == "bspline_csr_d3_o1"


def test_every_column_tells_encodings_that_hold_each_column_in_order() -> None:
    full = np.arange(12, dtype=np.int32)
    gap = np.array([0, 1, 2, 4, 5, 6], dtype=np.int32)  # a skipped (zero) feature's column
    assert every_column(FOURIER, full, 12) and every_column(HERMITE, full, 12)
    assert not every_column(FOURIER, gap, 6)
    assert not every_column(FOURIER, full, 0)
    assert not every_column(BSPLINE, full, 12)  # its w_d needs the difference penalty
    rng = np.random.default_rng(0)
    w, v = rng.normal(size=13), rng.normal(size=12).astype(np.float32)
    assert dense_score(w, v, 11) == pytest.approx(float(w[:11] @ v[:11].astype(np.float64)))



def test_dense_step_then_score_is_the_step_and_the_score_by_numpy() -> None:
    """The fused sweep of a deferred step and the next row's score: the model moves by
    exactly the float64 values of w + eta v (a product, then a sum), entries from nnz on
    stay, and the score is the stepped model's dot product with the other row."""
    rng = np.random.default_rng(1)
    w, avg = rng.normal(size=13), rng.normal(size=13)
    stepped, scored = rng.normal(size=(2, 12)).astype(np.float32)
    eta, eta_avg = -0.37, 0.011
    v = stepped[:11].astype(np.float64)
    w_ref, avg_ref = w.copy(), avg.copy()
    w_ref[:11] = w[:11] + eta * v
    avg_ref[:11] = avg[:11] + eta_avg * v
    score_ref = float(w_ref[:11] @ scored[:11].astype(np.float64))
    got = w.copy()
    assert dense_step_score(got, stepped, eta, scored, 11) == pytest.approx(score_ref,
                                                                            rel=1e-12)
    np.testing.assert_array_equal(got, w_ref)
    got, got_avg = w.copy(), avg.copy()
    assert dense_step_pair_score(got, got_avg, stepped, eta, eta_avg, scored, 11) == (
        pytest.approx(score_ref, rel=1e-12))
    np.testing.assert_array_equal(got, w_ref)
    np.testing.assert_array_equal(got_avg, avg_ref)

@njit
def _embed_fourier_term_major(x, ipar, fpar, idx, val):
    work = term_major_buffers(FOURIER, ipar, fpar, idx)
    return embed_term_major(FOURIER, x, ipar, fpar, work, val)


@njit
def _embed_hermite_term_major(x, ipar, fpar, idx, val):
    work = term_major_buffers(HERMITE, ipar, fpar, idx)
    return embed_term_major(HERMITE, x, ipar, fpar, work, val)


@pytest.mark.parametrize("kind", ["fourier", "hermite"])
def test_term_major_models_round_trip_and_score_as_the_map_does(kind: str) -> None:
    lo, hi = np.zeros(N_FEATURES), np.ones(N_FEATURES)
    fmap = (FourierMap(3).fit(lo, hi) if kind == "fourier"
            else HermiteMap(4, 1, clip=3.0).fit(np.full(N_FEATURES, 0.5), np.full(N_FEATURES, 0.3)))
    emb = embedding_params(fmap)
    rng = np.random.default_rng(0)
    W = rng.normal(size=(2, emb.n_dims + 1))
    P = to_term_major(W, emb.ipar)
    # the features' blocks transposed, by numpy
    columns = np.arange(emb.n_dims).reshape(N_FEATURES, emb.n_cols).T.reshape(-1)
    np.testing.assert_array_equal(term_major_columns(emb.ipar), columns)
    np.testing.assert_array_equal(P[:, :-1], W[:, columns])
    assert np.array_equal(P[:, -1], W[:, -1])  # the bias stays last
    back = np.zeros_like(W)
    from_term_major(back, P, emb.ipar)
    np.testing.assert_array_equal(back, W)
    # a row encoded in that order scores against the permuted model as the map's
    # materialised row does against the model
    idx = np.empty(emb.n_dims, dtype=np.int32)
    val = np.empty(emb.n_dims, dtype=np.float32)
    embed = _embed_fourier_term_major if kind == "fourier" else _embed_hermite_term_major
    for x in rng.random((5, N_FEATURES)).astype(np.float32):
        assert embed(x, emb.ipar, emb.fpar, idx, val) == emb.n_dims
        np.testing.assert_array_equal(idx, np.arange(emb.n_dims))
        ref = fmap.transform(x[None, :])[0].astype(np.float64)
        np.testing.assert_allclose(val, ref[columns], rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(val.astype(np.float64) @ P[0, :-1], ref @ W[0, :-1],
                                   rtol=1e-6)


#: Scores of an identity and a B-spline decision kernel (their kinds' own row helpers),
#: with the kernels' cache hits and misses in this process.
BOUND_KERNELS = """
    import json
    import numpy as np
    from streamlearn.features import BSplineMap
    from streamlearn.solvers.embedding import DECISION_OVR, decision_ovr_chunk, embedding_params

    X = np.linspace(-0.5, 2.5, 24, dtype=np.float32).reshape(8, 3)
    W = np.linspace(-1.0, 1.0, 2 * 25).reshape(2, 25)
    out = {}
    for name, m in (("identity", None), ("bspline", BSplineMap(1, 8, 1).fit(np.zeros(3),
                                                                          np.full(3, 2.0)))):
        emb = embedding_params(m, 3)
        w = np.ascontiguousarray(W[:, : emb.n_dims + 1])
        kernel = DECISION_OVR(emb.kind, emb.ipar, False)
        out[name] = {"scores": decision_ovr_chunk(X, w, 1.0, *emb).tolist(),
                     "hits": sum(kernel.stats.cache_hits.values()),
                     "misses": sum(kernel.stats.cache_misses.values())}
    print(json.dumps(out))
"""


def test_kernels_with_their_kinds_row_helpers_load_from_another_processs_cache(tmp_path):
    """numba keys a kernel's cache on its closure: the helpers bound as globals leave the
    key the same in every process, so a second process loads what the first compiled."""
    import json
    import os
    import subprocess
    import sys
    import textwrap

    from streamlearn.solvers.embedding import (
        BSPLINE_HELPERS,
        EVERY_COLUMN_HELPERS,
        IDENTITY_HELPERS,
        row_helpers,
    )

    def run() -> dict:
        out = subprocess.run([sys.executable, "-c", textwrap.dedent(BOUND_KERNELS)],
                             env={**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)},
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout.strip().splitlines()[-1])

    first, second = run(), run()
    for name in ("identity", "bspline"):
        assert first[name]["misses"] == 1 and first[name]["hits"] == 0
        assert second[name]["misses"] == 0 and second[name]["hits"] == 1
        assert second[name]["scores"] == first[name]["scores"]
    # and the scores are the map's: the transform times the models
    X = np.linspace(-0.5, 2.5, 24, dtype=np.float32).reshape(8, 3)
    W = np.linspace(-1.0, 1.0, 2 * 25).reshape(2, 25)
    m = BSplineMap(1, 8, 1).fit(np.zeros(3), np.full(3, 2.0))
    n = embedding_params(m, 3).n_dims
    np.testing.assert_allclose(second["bspline"]["scores"],
                               dense(m, X) @ (d_matrix(m) @ W[:, :n].T) + W[:, n],
                               rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(second["identity"]["scores"], X @ W[:, :3].T + W[:, 3],
                               rtol=1e-6)

    def bound(kind: int, sparse: bool, zero_preserving: bool = False) -> dict:
        def kernel():
            pass
        g = row_helpers(kind, sparse, zero_preserving)(kernel).__globals__
        return {name: g.get(name) for name in IDENTITY_HELPERS}

    assert bound(LINEAR, False) == IDENTITY_HELPERS
    assert bound(BSPLINE, False) == bound(BSPLINE, False, True) == BSPLINE_HELPERS
    assert bound(FOURIER, False) == bound(HERMITE, False) == EVERY_COLUMN_HELPERS
    for kind, sparse, zero_preserving in ((LINEAR, True, False), (BSPLINE, True, True),
                                          (FOURIER, False, True), (HERMITE, False, True)):
        # the generic helpers
        assert row_helpers(kind, sparse, zero_preserving)(make_X) is make_X
