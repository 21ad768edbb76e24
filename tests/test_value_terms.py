"""Value terms of AdditiveSVC: the encoding, the screening pass, the model."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.svm import LinearSVC

from streamlearn.data import open_dataset
from streamlearn.engine import LocalEngine
from streamlearn.errors import SchemaError
from streamlearn.features import BSplineMap, BSplinePairMap, value_columns, value_encode_row
from streamlearn.features.value_terms import (
    MAX_VALUES,
    MIN_VALUE_ROWS,
    check_value_terms,
    frequent_values,
    value_scale,
    value_table,
)
from streamlearn.io.model_file import load_model, save_model
from streamlearn.models import AdditiveSVC
from streamlearn.solvers.additive import HOLDOUT_SALT, Holdout, ModelPairs
from streamlearn.solvers.additive.interactions import SCREEN_BINS, ResidualModel, bin_edges
from streamlearn.solvers.additive.value_screening import (
    VALUE_SCORE,
    ValueCountPass,
    ValueScreeningPass,
    choose_value_terms,
    merge_counts,
    value_scores,
)
from streamlearn.solvers.embedding import (
    decision_ovr_chunk,
    embedding_params,
    encode_row,
    feature_terms,
    row_sq_norm,
)
from tests.conftest import killing_engine

SPIKES = (7.0, 19.0, 31.0)


def _jumps(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Three features: x0 an integer 0..39 whose effect jumps at :data:`SPIKES`, x1
    continuous with a smooth effect, x2 an integer 0..39 with a smooth effect only."""
    rng = np.random.default_rng(seed)
    X = np.stack([rng.integers(0, 40, n), rng.normal(size=n), rng.integers(0, 40, n)],
                 axis=1).astype(np.float32)
    f = (2.5 * np.isin(X[:, 0], SPIKES) + 0.03 * X[:, 0] + np.sin(2 * X[:, 1])
         + ((X[:, 2] - 20) / 12) ** 2 - 1.6)
    return X, (f + 0.5 * rng.normal(size=n) > 0).astype(np.int64)


# -- the encoding ------------------------------------------------------------------------
def test_value_encoding_kernel_matches_numpy() -> None:
    rng = np.random.default_rng(0)
    X = rng.integers(-3, 8, (200, 4)).astype(np.float32)
    X[:5, 2] = [0.5, -0.0, 7.0, 100.0, -3.0]  # off the table, signed zero, the ends
    terms = check_value_terms([(2, (-3.0, 0.0, 4.0, 7.0)), (0, (1.0, 5.0)), (3, (6.0,))])
    features = np.array([f for f, _ in terms], dtype=np.int64)
    bounds = np.array([0, 4, 6, 7], dtype=np.int64)
    table = np.array([v for _, values in terms for v in values])
    expected = value_columns(X, terms)
    assert expected.shape == (200, 7)
    idx = np.empty(3, dtype=np.int32)
    val = np.empty(3, dtype=np.float32)
    for r in range(X.shape[0]):
        nnz = value_encode_row(X[r], features, bounds, table, 1.0, 10, idx, val, 0)
        row = np.zeros(7, dtype=np.float32)
        row[idx[:nnz] - 10] = val[:nnz]
        np.testing.assert_array_equal(row, expected[r])
    nnz = value_encode_row(X[7], features, bounds, table, 2.5, 0, idx, val, 0)
    np.testing.assert_array_equal(val[:nnz], 2.5)
    # by hand: a row's value found in each table, or not
    np.testing.assert_array_equal(value_columns(np.array([[5, 0, 0, 6]], np.float32), terms),
                                  [[0, 1, 0, 0, 0, 1, 1]])


@pytest.mark.parametrize("order", [0, 1, 2])
@pytest.mark.parametrize("n_bases", [4, 8, 32])
def test_value_scale_is_the_cheapest_end_to_end_rise_of_a_curve(order, n_bases) -> None:
    """``s^2`` against the minimum of ``||D w||^2`` with ``w_last - w_first = 1``, solved
    as the KKT system of the constrained quadratic."""
    from streamlearn.features.difference_penalty import difference_matrix

    D = difference_matrix(n_bases, order)
    e = np.zeros(n_bases)
    e[0], e[-1] = -1.0, 1.0
    kkt = np.block([[2 * D.T @ D, e[:, None]], [e[None, :], np.zeros((1, 1))]])
    w = np.linalg.solve(kkt, np.concatenate([np.zeros(n_bases), [1.0]]))[:n_bases]
    least = float(w @ D.T @ D @ w)
    assert value_scale(n_bases, order) ** 2 == pytest.approx(1.0 / least, rel=1e-9)
    if order < 2:
        assert value_scale(n_bases, order) == pytest.approx(np.sqrt(2 if order == 0
                                                                    else n_bases - 1))


@pytest.mark.parametrize("order", [0, 1, 2])
def test_value_scale_closed_form_equals_the_dense_solve(order) -> None:
    """The closed form against ``||D^-T e||`` solved densely, for sizes from one basis
    up (a categorical feature of thousands of categories has as many bases)."""
    from streamlearn.features.difference_penalty import difference_matrix

    for n_bases in [1, 2, 3, 4, 5, 7, 16, 33, 100, 257]:
        D = difference_matrix(n_bases, order)
        e = np.zeros(n_bases)
        e[0], e[-1] = -1.0, 1.0
        dense = float(np.linalg.norm(np.linalg.solve(D.T, e)))
        assert value_scale(n_bases, order) == pytest.approx(dense, rel=1e-12)
    # a million bases: the difference vector summed directly (a dense matrix would
    # take terabytes)
    n = 10**6
    far = np.arange(n, dtype=np.float64)[::-1] + 1.0  # D2^-T e_last, (n, ..., 1)
    far[0] -= 1.0
    direct = {0: np.sqrt(2.0), 1: np.sqrt(n - 1.0), 2: np.linalg.norm(far)}[order]
    assert value_scale(n, order) == pytest.approx(direct, rel=1e-12)
    with pytest.raises(ValueError, match="penalty order"):
        value_scale(8, 3)


def test_on_the_fly_encoding_scores_terms_and_norms_match_the_materialised_embedding() -> None:
    rng = np.random.default_rng(1)
    X = rng.integers(0, 6, (60, 4)).astype(np.float32)
    X[:, 1] = rng.normal(size=60)
    fmap = BSplinePairMap(degree=2, n_bases=6, penalty_order=2, interactions=[(0, 3)],
                          pair_bases=5, value_terms=[(0, (1.0, 3.0, 4.0)), (2, (0.0, 5.0))]
                          ).fit(X.min(0), X.max(0))
    emb = embedding_params(fmap)
    assert emb.n_dims == 4 * 6 + 25 + 5 and emb.n_value_terms == 2
    Z = fmap.transform(X).astype(np.float64)
    assert fmap.value_scale == value_scale(6, 2) > 1.0
    np.testing.assert_array_equal(Z[:, 49:], value_columns(X, fmap.value_terms,
                                                           fmap.value_scale))
    plain = BSplinePairMap(degree=2, n_bases=6, penalty_order=2, interactions=[(0, 3)],
                           pair_bases=5).fit(X.min(0), X.max(0))
    np.testing.assert_allclose(Z[:, :49], plain.transform(X), atol=1e-6)
    W = rng.normal(size=(3, emb.n_dims + 1))
    W_d = W.copy()  # w_d = D_2^-1 w on the feature blocks, w on the pairs and values
    blocks = W_d[:, :24].reshape(3, 4, 6)
    for _ in range(2):
        np.cumsum(blocks, axis=2, out=blocks)
    scores = decision_ovr_chunk(X, W_d, 0.5, *emb)
    np.testing.assert_allclose(scores, Z @ W[:, :-1].T + 0.5 * W[:, -1], rtol=1e-5, atol=1e-6)
    # a feature's term holds its value term: the terms add up to the score
    terms = feature_terms(X, W_d, *emb)
    assert terms.shape == (60, 5, 3)
    np.testing.assert_allclose(terms.sum(axis=1), Z @ W[:, :-1].T, rtol=1e-5, atol=1e-6)
    only_values = np.zeros_like(W)
    only_values[:, 49:52] = W[:, 49:52]  # feature 0's values alone
    np.testing.assert_allclose(feature_terms(X, only_values, *emb)[:, 0],
                               Z[:, 49:52] @ W[:, 49:52].T, atol=1e-6)
    idx = np.empty(emb.max_nnz, dtype=np.int32)
    val = np.empty(emb.max_nnz, dtype=np.float32)
    scratch = np.empty(6)
    for r in range(10):
        nnz = encode_row(emb.kind, X[r], emb.ipar, emb.fpar, idx, val)
        assert nnz == 4 * 3 + 4 + np.count_nonzero(Z[r, 49:]) and np.all(np.diff(idx[:nnz]) > 0)
        norm = row_sq_norm(emb.kind, X[r], emb.ipar, emb.fpar, idx, val, scratch)
        assert norm == pytest.approx(float(Z[r] @ Z[r]), rel=1e-5)
    assert fmap.sum_sq_norms(X) == pytest.approx(float((Z * Z).sum()), rel=1e-6)


def test_frequent_values_rule() -> None:
    rng = np.random.default_rng(2)
    k = 4096
    sample = np.stack([
        rng.normal(size=k),  # continuous: no value repeats
        rng.integers(0, 2, k),  # two values: its curve has a weight per value
        rng.integers(0, 100, k),  # 100 values, each about 41 times: the 32 most frequent
        np.where(rng.random(k) < 0.999, 0.0, rng.normal(size=k)),  # one frequent value
        np.where(rng.random(k) < 0.9, 0.0, rng.choice([3.0, 8.0, 1.5], k)),  # an atom + 3
    ], axis=1).astype(np.float32)
    sample[:3, 4] = [-1.0, -2.0, 9.0]  # held by fewer than 4 rows: not in the table
    found = frequent_values(sample)
    assert sorted(found) == [2, 4]
    values, counts = np.unique(sample[:, 2], return_counts=True)
    top = np.sort(values[np.argsort(-counts, kind="stable")[:MAX_VALUES]])
    np.testing.assert_array_equal(found[2], top)
    np.testing.assert_array_equal(found[4], [0.0, 1.5, 3.0, 8.0])
    assert frequent_values(sample, skip=[4]).keys() == {2}


def test_value_table_rule() -> None:
    """Every value of at least ``least`` rows, the ``most`` most frequent (ties: the
    smaller value), increasing; against a sort in Python."""
    rng = np.random.default_rng(12)
    values = rng.permutation(np.arange(300, dtype=np.float64) / 4)
    counts = rng.integers(0, 12, 300)
    for least, most in ((3, 256), (3, 40), (1, 1000), (11, 5)):
        ranked = sorted(zip(values.tolist(), counts.tolist(), strict=True),
                        key=lambda vc: (-vc[1], vc[0]))
        expected = sorted(v for v, c in [vc for vc in ranked if vc[1] >= least][:most])
        np.testing.assert_array_equal(value_table(values, counts, least, most), expected)


def test_merge_counts_adds_and_keeps_the_most_frequent() -> None:
    a_values, a_counts = np.array([0.0, 2.0, 5.0]), np.array([4, 1, 2])
    b_values, b_counts = np.array([2.0, 3.0, 5.0, 9.0]), np.array([6, 1, 2, 1])
    values, counts = merge_counts(a_values, a_counts, b_values, b_counts)
    np.testing.assert_array_equal(values, [0.0, 2.0, 3.0, 5.0, 9.0])
    np.testing.assert_array_equal(counts, [4, 7, 1, 4, 1])
    # beyond ``most`` values: the most frequent (ties: the smaller value), increasing
    values, counts = merge_counts(a_values, a_counts, b_values, b_counts, most=3)
    np.testing.assert_array_equal(values, [0.0, 2.0, 5.0])
    np.testing.assert_array_equal(counts, [4, 7, 4])


def test_value_count_pass_matches_numpy() -> None:
    """The counts over chunks of the training rows (held-out rows and rows of weight 0
    left out) against numpy's over all rows at once."""
    rng = np.random.default_rng(13)
    n = 5000
    X = np.stack([rng.integers(0, 50, n), rng.normal(size=n),
                  np.where(rng.random(n) < 0.9, 0.0, rng.integers(1, 400, n))],
                 axis=1).astype(np.float32)
    weight = np.where(rng.random(n) < 0.1, 0.0, rng.uniform(0.5, 2.0, n))
    y = rng.integers(0, 2, n)
    holdout = Holdout.fraction(0.1, 14 ^ HOLDOUT_SALT)
    pass_ = ValueCountPass([0, 2], holdout)
    data = open_dataset(X, target=y, weight=weight, chunk_rows=700)
    counts = LocalEngine(progress=False).run(pass_, data)
    train = ~holdout.mask(np.arange(n)) & (weight > 0)
    for t, f in enumerate((0, 2)):
        x = X[train, f]
        values, expected = np.unique(x[np.isfinite(x)], return_counts=True)
        np.testing.assert_array_equal(counts.values[t], values.astype(np.float64))
        np.testing.assert_array_equal(counts.counts[t], expected)


@pytest.mark.parametrize(("terms", "error", "match"), [
    ([(0, ())], ValueError, "no values"),
    ([(0, (2.0, 1.0))], ValueError, "increasing"),
    ([(0, (1.0, np.inf))], ValueError, "not finite"),
    ([(0, (1.0,)), (0, (2.0,))], ValueError, "two value terms"),
    ([(5, (1.0,))], SchemaError, "outside"),
    ([("a",)], ValueError, "feature index and its values"),
])
def test_bad_value_terms_are_refused_clearly(terms, error, match) -> None:
    with pytest.raises(error, match=match):
        check_value_terms(terms, n_features=3)


# -- the screening pass ------------------------------------------------------------------
def test_screening_pass_sums_and_scores_match_numpy() -> None:
    """The pass over chunks against the residuals computed at once, and the score
    against its definition: the score statistics of offsets per value beyond those of
    offsets per bin, less their degrees of freedom."""
    X, y = _jumps(3000, seed=3)
    y3 = np.where(X[:, 1] > 1.0, 2, y)
    fmap = BSplineMap(degree=1, n_bases=8, penalty_order=1).fit(X.min(0), X.max(0))
    emb = embedding_params(fmap)
    rng = np.random.default_rng(4)
    W = rng.normal(scale=0.3, size=(3, emb.n_dims + 1))
    a, b = np.array([-1.2, -0.8, -1.0]), np.array([0.1, -0.2, 0.0])
    candidates = frequent_values(X[:2000], skip=[1])
    holdout = Holdout.fraction(0.1, 5 ^ HOLDOUT_SALT)
    pass_ = ValueScreeningPass(ResidualModel.of(W, emb, ModelPairs.of(3), 1.0, a, b),
                               candidates, holdout)
    data = open_dataset(X, target=y3, chunk_rows=700)
    state = LocalEngine(progress=False).run(pass_, data)

    train = ~holdout.mask(np.arange(3000))
    P = 1.0 / (1.0 + np.exp(a * decision_ovr_chunk(X[train], W, 1.0, *emb) + b))
    R = (y3[train, None] == np.arange(3)[None, :]) - P
    edges = bin_edges(X[:2000][:, pass_.features], SCREEN_BINS)

    def explained(groups: list[np.ndarray]) -> np.ndarray:
        return sum(r.sum(axis=0) ** 2 / (r**2).sum(axis=0) for r in groups if len(r))

    expected = []
    for t, f in enumerate(pass_.features):
        table = pass_.tables[t]
        x = X[train, f]
        on = np.isin(x, table)
        per_value = [R[on & (x == v)] for v in table]
        cells = slice(pass_.bounds[t], pass_.bounds[t + 1])
        np.testing.assert_allclose(state.sums[cells], [r.sum(axis=0) for r in per_value],
                                   atol=1e-9)
        np.testing.assert_allclose(state.squares[cells],
                                   [(r**2).sum(axis=0) for r in per_value], atol=1e-9)
        bins = np.searchsorted(edges[t], x, side="right")
        per_bin = [R[on & (bins == c)] for c in np.unique(bins[on])]
        dof = sum(len(r) > 0 for r in per_value) - len(per_bin)
        expected.append(float((explained(per_value) - explained(per_bin) - dof).sum()))
    value_bins = [np.searchsorted(edges[t], table, side="right")
                  for t, table in enumerate(pass_.tables)]
    np.testing.assert_allclose(value_scores(state, pass_.bounds, value_bins), expected,
                               rtol=1e-8)


def test_screening_finds_the_feature_that_jumps() -> None:
    X, y = _jumps(6000, seed=5)
    model = AdditiveSVC(value_terms=False, interactions=0, n_bases=8).fit(X, y)
    emb = embedding_params(model.feature_map_)
    candidates = frequent_values(X[:4096])
    assert sorted(candidates) == [0, 2]
    pass_ = ValueScreeningPass(ResidualModel.of(model.coef_d_, emb, ModelPairs.of(2), 1.0,
                                                model.platt_a_, model.platt_b_),
                               candidates, None)
    state = LocalEngine(progress=False).run(pass_, open_dataset(X, target=y))
    terms, scores = choose_value_terms(state, pass_, X[:4096])
    assert [f for f, _ in terms] == [0] and scores[0] >= VALUE_SCORE


# -- the model ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def jumps() -> tuple[AdditiveSVC, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    X, y = _jumps(8000, seed=6)
    Xt, yt = _jumps(4000, seed=7)
    return AdditiveSVC(chunk_rows=2000).fit(X, y), X, y, Xt, yt


def test_auto_keeps_the_value_term_of_the_feature_that_jumps(jumps) -> None:
    model, X, y, Xt, yt = jumps
    check = model.value_check_
    assert check["kept"] and check["screened"] == [0]
    assert check["held_out_log_loss_with"] < check["held_out_log_loss_without"]
    (name, values), = model.value_terms_
    # every value of at least MIN_VALUE_ROWS training rows, not only the sample's 32
    train = ~Holdout.fraction(0.1, 0 ^ HOLDOUT_SALT).mask(np.arange(X.shape[0]))
    seen, counts = np.unique(X[train, 0], return_counts=True)
    assert name == "x0" and set(SPIKES) <= set(values)
    assert values == tuple(seen[counts >= MIN_VALUE_ROWS].tolist()) and len(values) == 40
    plain = AdditiveSVC(chunk_rows=2000, value_terms=False).fit(X, y)
    assert not hasattr(plain, "value_check_") and plain.value_terms_ == ()
    assert model.score(Xt, yt) > plain.score(Xt, yt) + 0.01
    # the shape of x0 jumps at each spike, above both neighbours
    shape = model.shape_functions(n_points=40)
    x0 = shape[shape.feature == "x0"].set_index("value").contribution
    for v in SPIKES:
        assert x0[v] > x0[v - 1] + 0.5 and x0[v] > x0[v + 1] + 0.5
    terms = model.term_contributions(X[:200])
    np.testing.assert_allclose(terms.sum(axis=1) + model.intercept_, model.svm_scores(X[:200]),
                               atol=1e-9)


def test_rare_values_that_jump_get_weights_of_their_own() -> None:
    """x0 takes 80 integer values: the even ones common (jumps at three of them make the
    feature's term chosen), the odd ones rare (about 6 rows each, 1 or 2 in the describe
    sample, so not in its table) and all of them raising the label. The table holds every
    value of at least MIN_VALUE_ROWS training rows, odd ones included, and the model
    follows the rare values, which the curve (one knot per 10 values) cannot."""

    def rows(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
        rng = np.random.default_rng(seed)
        x0 = 2 * rng.integers(0, 40, n) + (rng.random(n) < 0.02)
        x1 = rng.normal(size=n)
        f = (2.5 * np.isin(x0, (8, 30, 52)) + 3.0 * (x0 % 2) + 0.02 * x0 + np.sin(2 * x1)
             - 1.6)
        X = np.stack([x0, x1], axis=1).astype(np.float32)
        return X, (f + 0.5 * rng.normal(size=n) > 0).astype(np.int64)

    X, y = rows(16_000, 15)
    Xt, yt = rows(200_000, 16)
    model = AdditiveSVC(interactions=0).fit(X, y)
    (name, values), = model.value_terms_
    assert name == "x0"
    train = ~Holdout.fraction(0.1, 0 ^ HOLDOUT_SALT).mask(np.arange(X.shape[0]))
    seen, counts = np.unique(X[train, 0], return_counts=True)
    assert values == tuple(seen[counts >= MIN_VALUE_ROWS].tolist())
    odd = [v for v in values if v % 2]
    assert len(odd) >= 20
    rare = np.isin(Xt[:, 0], odd)
    plain = AdditiveSVC(interactions=0, value_terms=False).fit(X, y)
    ours = model.predict(Xt[rare]) == yt[rare]
    theirs = plain.predict(Xt[rare]) == yt[rare]
    assert ours.mean() > theirs.mean() + 0.1


def test_the_command_line_reports_the_value_terms(jumps) -> None:
    from streamlearn.cli import values_line

    model = jumps[0]
    check = model.value_check_
    assert values_line(model) == (
        f"value terms: 1 screened and trained, kept (held-out log-loss "
        f"{check['held_out_log_loss_without']:.4f} without, "
        f"{check['held_out_log_loss_with']:.4f} with); x0 (40 values)")


def test_no_value_term_where_no_feature_jumps() -> None:
    X, y = _jumps(6000, seed=8)
    rng = np.random.default_rng(8)
    f = np.sin(2 * X[:, 1]) + ((X[:, 2] - 20) / 12) ** 2 + 0.03 * X[:, 0] - 1.6
    y = (f + 0.5 * rng.normal(size=6000) > 0).astype(np.int64)
    model = AdditiveSVC().fit(X, y)
    assert model.value_terms_ == () and not model.value_check_["kept"]
    assert model.value_check_["candidates"] == [0, 2]
    from streamlearn.cli import values_line

    assert values_line(model).startswith("value terms: none (2 candidate features; ")


def test_a_spread_feature_reports_its_values_as_given() -> None:
    """A capital-gain-like feature (mostly zero, a long tail of round values, jumps at
    three of them) is spread by the tail map; its value term, its report and its shape
    still hold the values of the data, not their float32 round trips."""
    rng = np.random.default_rng(11)
    n = 20_000
    levels = np.unique(np.round(np.exp(rng.uniform(5, 11, 40))))
    gain = np.where(rng.random(n) < 0.8, 0.0, rng.choice(levels, n)).astype(np.float32)
    other = rng.normal(size=n).astype(np.float32)
    f = (2.5 * np.isin(gain, levels[[5, 17, 30]]) + 0.3 * (gain > 3000)
         + np.sin(2 * other) - 0.5)
    y = (f + 0.5 * rng.normal(size=n) > 0).astype(np.int64)
    model = AdditiveSVC(interactions=0).fit(np.stack([gain, other], axis=1), y)
    assert 0 in model.feature_transform_.features and model.value_check_["kept"]
    (name, values), = model.value_terms_
    assert name == "x0" and set(values) <= {0.0, *levels.tolist()}
    shape = model.shape_functions(n_points=10)
    assert set(values) <= set(shape[shape.feature == "x0"].value)


def test_value_terms_train_as_a_linear_svm_on_the_materialised_embedding(jumps) -> None:
    """Dual CD on the on-the-fly embedding with a value term against liblinear on the
    precomputed one, on the same training rows (the held-out ones aside), both centred
    on their mean (dual CD's intercept is that of the centred rows). The first 6,000 rows
    keep the value term and take dual CD 366 epochs to tol=1e-5, against 646 on all."""
    _, X, y, _, _ = jumps
    X, y = X[:6000], y[:6000]
    fitted = AdditiveSVC(solver="dcd", n_bases=8, interactions=0, C=0.5, tol=1e-5,
                         epochs=2000, chunk_rows=2000).fit(X, y)
    assert fitted.value_terms_ and fitted.value_check_["kept"]
    train = ~Holdout.fraction(0.1, 0 ^ HOLDOUT_SALT).mask(np.arange(X.shape[0]))
    rows = fitted._model_rows(X)
    Z = fitted.feature_map_.transform(rows).astype(np.float64)
    Z -= Z[train].mean(axis=0)
    reference = LinearSVC(C=0.5, loss="hinge", dual=True, tol=1e-7, max_iter=200_000,
                          intercept_scaling=1.0).fit(Z[train], y[train])
    ours = fitted.svm_scores(X)[:, 0]
    theirs = reference.decision_function(Z)
    np.testing.assert_allclose(ours, theirs, atol=2e-3 * np.abs(theirs).max())


def test_model_file_keeps_the_value_terms(jumps, tmp_path) -> None:
    model, X, _, _, _ = jumps
    loaded = load_model(save_model(model, tmp_path / "values.slm"))
    assert loaded.value_terms_ == model.value_terms_
    assert loaded.feature_map_.value_terms == model.feature_map_.value_terms
    np.testing.assert_array_equal(loaded.predict_proba(X[:500]), model.predict_proba(X[:500]))


def test_a_killed_fit_with_value_terms_resumes_to_the_same_model(tmp_path) -> None:
    X, y = _jumps(8000, seed=10)
    params = {"interactions": 0, "n_bases": 8, "chunk_rows": 1000}
    whole = AdditiveSVC(**params).fit(X, y)
    assert whole.value_terms_

    Killed = killing_engine()

    AdditiveSVC(**params).fit(X, y, engine=Killed(progress=False))
    n_runs, Killed.runs = Killed.runs, 0
    Killed.kill_at = n_runs - 2  # inside the training with the value term
    with pytest.raises(RuntimeError, match="killed"):
        AdditiveSVC(**params).fit(X, y, checkpoint=tmp_path / "c",
                                  engine=Killed(progress=False))
    Killed.kill_at = None
    resumed = AdditiveSVC(**params).fit(X, y, checkpoint=tmp_path / "c",
                                        engine=Killed(progress=False))
    assert resumed.value_terms_ == whole.value_terms_
    np.testing.assert_allclose(resumed.coef_d_, whole.coef_d_, rtol=1e-12, atol=1e-14)


def test_bad_value_terms_setting_is_refused() -> None:
    X, y = _jumps(300, seed=9)
    with pytest.raises(ValueError, match="'value_terms' parameter of AdditiveSVC must be"):
        AdditiveSVC(value_terms=True).fit(X, y)
