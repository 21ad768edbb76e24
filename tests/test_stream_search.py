"""StreamSearchCV: successive halving over candidates trained side by side in one stream."""

from __future__ import annotations

import math
import re
import warnings
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.model_selection import GridSearchCV, PredefinedSplit
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.estimator_checks import parametrize_with_checks

from streamlearn.data import open_dataset
from streamlearn.data.synthetic import additive_problem
from streamlearn.engine import DaskEngine
from streamlearn.features import BSplinePairMap
from streamlearn.models import AdditiveSVC
from streamlearn.models import search as search_module
from streamlearn.models.base import feature_names_of
from streamlearn.models.racing import finish_lane, racing, record_clamped
from streamlearn.models.search import StreamSearchCV, mix_parameters
from tests.conftest import write_parquet_file


class RowRecorder(ClassifierMixin, BaseEstimator):
    """Remembers the rows ``partial_fit`` saw (their first feature holds the row id); its
    held-out score is its parameter ``quality``, so the race's order is known."""

    trained_ids: ClassVar[set[int]] = set()

    def __init__(self, quality: float = 0.0) -> None:
        self.quality = quality

    def partial_fit(self, X: Any, y: Any, classes: Any = None,
                    sample_weight: Any = None) -> RowRecorder:
        if classes is not None:
            self.classes_ = np.asarray(classes)
        self.rows_ = getattr(self, "rows_", 0) + len(X)
        RowRecorder.trained_ids.update(int(v) for v in np.asarray(X)[:, 0])
        self.coef_ = np.full(2, float(self.quality))
        return self

    def fit(self, X: Any, y: Any = None) -> RowRecorder:
        self.classes_ = np.array([0, 1])
        return self

    def predict(self, X: Any) -> np.ndarray:
        return np.zeros(len(X), dtype=np.int64)

    def score(self, X: Any, y: Any = None, sample_weight: Any = None) -> float:
        return float(self.quality)


class FitDiffers(RowRecorder):
    """A lane's held-out score is ``quality``, but trained by ``fit`` it scores
    ``-quality``: the race and the finalists' fits rank the settings in opposite orders.
    ``fit`` records the rows it trained on."""

    _lanes_train_like_fit: ClassVar[bool] = False
    _fits_datasets: ClassVar[bool] = True
    fit_ids: ClassVar[list[set[int]]] = []

    def fit(self, X: Any, y: Any = None) -> FitDiffers:
        ids = {int(r) for c in X.chunks() for r in np.asarray(c.X)[:, 0]}
        FitDiffers.fit_ids.append(ids)
        self.classes_ = np.array([0, 1])
        self.fitted_ = True
        return self

    def score(self, X: Any, y: Any = None, sample_weight: Any = None) -> float:
        return -float(self.quality) if getattr(self, "fitted_", False) else float(self.quality)


def _ids(n: int) -> tuple[np.ndarray, np.ndarray]:
    X = np.column_stack([np.arange(n), np.random.default_rng(0).normal(size=n)])
    return X.astype(np.float32), (np.arange(n) % 2)


def _stored(X: np.ndarray, y: np.ndarray, path: Any) -> Any:
    """``X`` and ``y`` as a parquet file (stored rows, read by chunk), and its target."""
    frame = pd.DataFrame({f"x{j}": X[:, j] for j in range(X.shape[1])})
    frame["y"] = y
    return write_parquet_file(frame, path / "rows.parquet", row_group_size=1000), "y"


@pytest.mark.parametrize(("n_candidates", "expected"),
                         [(8, [8, 4, 2, 1]), (5, [5, 3, 2, 1]), (3, [3, 2, 1]), (1, [1])])
def test_halving_keeps_the_ceiling_of_half_and_the_best(n_candidates, expected):
    X, y = _ids(6000)
    grid = {"quality": [float(q) for q in np.random.default_rng(1).permutation(n_candidates)]}
    search = StreamSearchCV(RowRecorder(), grid, min_resource=500, chunk_rows=400,
                            refit=False).fit(X, y)
    assert search.n_candidates_ == expected
    assert search.best_params_ == {"quality": float(n_candidates - 1)}
    # the survivors' resources grow by the factor from rung to rung
    assert all(b == 2 * a for a, b in zip(search.n_resources_, search.n_resources_[1:],
                                          strict=False))
    ranks = np.asarray(search.cv_results_["rank_test_score"])
    assert ranks[search.best_index_] == 1
    assert sorted(ranks.tolist()) == list(range(1, n_candidates + 1))


def test_held_out_blocks_are_never_trained_on_and_read_once(tmp_path):
    X, y = _ids(10_000)
    RowRecorder.trained_ids = set()
    search = StreamSearchCV(RowRecorder(), {"quality": [0.0, 1.0]}, min_resource=100,
                            validation_fraction=0.1, chunk_rows=250,
                            refit=False).fit(*_stored(X, y, tmp_path))
    trained = RowRecorder.trained_ids
    held = set(range(10_000)) - trained
    # stored rows: whole chunks of 250 rows, about 10% of the rows
    assert len(held) == search.n_validation_ == 1000
    blocks = {i // 250 for i in held}
    assert len(blocks) == 4 and all(i // 250 in blocks for i in held)
    # one epoch: the race read the data once, plus the held-out blocks once
    assert search.search_passes_ == pytest.approx(1.1)
    # rows in memory: blocks of floor(1000 / 200) rows, one in each 200th of the rows
    RowRecorder.trained_ids = set()
    search = StreamSearchCV(RowRecorder(), {"quality": [0.0, 1.0]}, min_resource=100,
                            validation_fraction=0.1, chunk_rows=250, refit=False).fit(X, y)
    held = np.setdiff1d(np.arange(10_000), list(RowRecorder.trained_ids))
    assert search.block_rows_ == 5 and held.size == search.n_validation_ == 1000
    assert np.array_equal(np.unique(held // 5, return_counts=True)[1], np.full(200, 5))
    assert np.array_equal(np.unique(held // 50), np.arange(200))
    assert search.search_passes_ == pytest.approx(1.1)


def test_budget_rule_in_passes():
    # small data: the first rung still sees min_resource rows, so the race takes more passes
    X, y = _ids(2200)
    search = StreamSearchCV(RowRecorder(), {"quality": [0.0, 1.0, 2.0, 3.0]},
                            min_resource=1000, chunk_rows=110, refit=False).fit(X, y)
    n_train = 2200 - search.n_validation_
    assert search.budgets_ == [1000, 2000, 4000]
    assert search.search_passes_ == pytest.approx(
        math.ceil(4000 / n_train) + search.n_validation_ / 2200)


def _additive_split(n: int = 6000):
    X, y = additive_problem(n, seed=3)
    return X, y


@pytest.mark.parametrize(("chunk_rows", "max_rows", "expected", "in_memory"),
                         [(200, 10_000, 200, 3), (5000, 10_000, 300, 3), (5000, 120, 120, 1),
                          (None, 10_000, 300, 3), (2, 10_000, 2, 2)])
def test_held_out_blocks_are_chunk_rows_at_most_a_twentieth_and_the_cap(
        tmp_path, chunk_rows, max_rows, expected, in_memory):
    # min(chunk_rows (the dataset's by default), ceil(n / 20), max_validation_rows), as
    # the chunk_rows docstring states: 6000 rows give blocks of 300 at most; rows in memory
    # also floor(held-out rows / 200) at most, in blocks one in each of as many spans
    X, y = _additive_split()
    search = StreamSearchCV(AdditiveSVC(progress=False), {"C": [1.0]}, chunk_rows=chunk_rows,
                            max_validation_rows=max_rows)
    path, target = _stored(X, y, tmp_path)
    stored = open_dataset(path, target=target, chunk_rows=chunk_rows or 4096)
    wanted = min(0.1 * 6000, max_rows)
    for data, block in ((stored, expected), (open_dataset(X, target=y), in_memory)):
        held_out = search._held_out_blocks(data, seed=0)
        assert search.block_rows_ == block
        count = min(max(1, int(wanted // block)), -(-6000 // block) - 1)
        assert held_out.size == count and np.all(np.diff(held_out) > 0)
        if data is not stored:  # the k-th block lies in the k-th of `count` equal spans
            spans = np.floor(np.arange(count + 1) * (-(-6000 // block) / count)).astype(int)
            assert np.all((held_out >= spans[:-1]) & (held_out < spans[1:]))


def test_choice_equals_the_exhaustive_grid_on_the_same_held_out_rows():
    X, y = _additive_split()
    grid = {"embedding": ["linear", "bspline"], "C": [1e-4, 1.0]}
    search = StreamSearchCV(AdditiveSVC(progress=False), grid, chunk_rows=300,
                            min_resource=2000, random_state=0).fit(X, y)
    held = np.ones(len(y), dtype=int)
    trained = np.ones(len(y), dtype=bool)
    block = search.block_rows_
    # reference: scikit-learn's exhaustive grid, fit on the training rows, scored on the
    # same held-out blocks
    n_blocks = -(-len(y) // block)
    rng = np.random.default_rng([0, 0x5EA2C4])
    count = search.n_validation_ // block
    blocks = rng.choice(n_blocks, size=count, replace=False)
    for b in blocks:
        trained[b * block:(b + 1) * block] = False
    held[trained] = -1
    held[~trained] = 0
    assert (~trained).sum() == search.n_validation_
    reference = GridSearchCV(AdditiveSVC(progress=False), grid, cv=PredefinedSplit(held),
                             refit=False).fit(X, y)
    assert search.best_params_ == reference.best_params_
    assert search.score(X, y) > 0.85


def _paired_problem(n: int, seed: int = 5):
    """Five features; the label follows one main effect and the pairs (0, 1) and (2, 3)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, 5)).astype(np.float32)
    f = 2 * X[:, 0] * X[:, 1] - 1.5 * np.sign(X[:, 2] * X[:, 3]) + np.sin(2 * X[:, 4])
    return X, (f + 0.3 * rng.normal(size=n) > 0).astype(np.int64)


def test_lanes_train_the_pairs_the_template_screened():
    X, y = _paired_problem(8000)
    search = StreamSearchCV(AdditiveSVC(progress=False), {"C": [0.1, 10.0]}, refit=False,
                            chunk_rows=400, min_resource=2000).fit(X, y)
    template = search.lane_template_
    names = list(feature_names_of(template))  # x0, x1, ...: the array's columns
    screened = tuple((names.index(a), names.index(b)) for a, b in template.interactions_)
    assert {(0, 1), (2, 3)} <= set(screened)
    # the template is the estimator as given, at the first count and grid "auto" tries,
    # fitted on the training rows alone
    given = AdditiveSVC(progress=False, n_bases=8, pair_bases=8, tol=0.01)
    assert template.get_params() == given.get_params()
    assert template.n_train_ + template.n_calibration_ == len(y) - search.n_validation_
    lane = search.best_estimator_  # refit=False: the race's survivor, a lane
    assert isinstance(lane.feature_map_, BSplinePairMap)
    assert lane.feature_map_.interactions == screened
    assert lane.feature_map_.pair_bases == template.pair_bases_
    # the template's passes over the training rows count among the search's
    share = (len(y) - search.n_validation_) / len(y)
    assert search.search_passes_ > share * template.n_passes_ + 1
    # with the pairs, the lane is far better than the same race without them
    plain = StreamSearchCV(AdditiveSVC(progress=False, interactions=0), {"C": [0.1, 10.0]},
                           refit=False, chunk_rows=400, min_resource=2000).fit(X, y)
    assert plain.lane_template_ is None
    assert not isinstance(plain.best_estimator_.feature_map_, BSplinePairMap)
    assert search.best_score_ > plain.best_score_ + 0.05


def test_a_lane_records_the_values_it_clamps_inside_a_race_and_warns_outside():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(3000, 3)).astype(np.float32)
    y = (X[:, 0] * X[:, 1] > 0).astype(np.int64)
    lane = AdditiveSVC(progress=False, interactions=[(0, 1)])  # pairs: the map keeps its range
    lane.partial_fit(X[:300] / 3, y[:300], classes=[0, 1])  # a first slice of a third the spread
    lo, hi = lane.feature_map_.lo_, lane.feature_map_.hi_
    later = X[300:]
    expected = np.count_nonzero((later < lo) | (later > hi), axis=0)  # numpy's count
    record: dict[str, list[int]] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # inside the race: no warning
        with racing(record):
            lane.partial_fit(later[:1500], y[300:1800])
            lane.partial_fit(later[1500:], y[1800:])
    assert record == {f"x{j}": [int(expected[j]), len(later)] for j in range(3)}
    with racing():  # a race that keeps no record: the lane warns as outside one
        assert not record_clamped(["x0"], np.array([5]), 10)
    with pytest.warns(UserWarning, match="outside the feature map's range"):
        lane.partial_fit(later, y[300:])


@pytest.mark.parametrize("feature_range", [None, (-0.5, 0.5)])
def test_a_search_warns_once_of_the_values_its_lanes_clamped(feature_range):
    # normal features: with feature_range (-0.5, 0.5) the lanes clamp about 62 % of the
    # values of each; with their own ranges, from their first slice (the rows are mixed
    # across chunks), under the 1 % that warns
    rng = np.random.default_rng(3)
    X = rng.normal(size=(6000, 3)).astype(np.float32)
    y = (X[:, 0] * X[:, 1] + 0.5 * X[:, 2] > 0).astype(np.int64)
    estimator = AdditiveSVC(progress=False, interactions=[(0, 1)], epochs=2, tol=None,
                            feature_range=feature_range)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        StreamSearchCV(estimator, {"C": [0.1, 10.0]}, refit=False, chunk_rows=300,
                       min_resource=2000, random_state=0).fit(X, y)
    texts = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    assert not [t for t in texts if "outside the feature map's range" in t]
    clamped = [t for t in texts if "lanes clamped" in t]
    if feature_range is None:
        assert not clamped
        return
    assert len(clamped) == 1
    share = np.mean(np.abs(X) > 0.5)  # of the rows the lanes trained on, near all of them
    reported = [float(v) / 100 for v in re.findall(r"'x\d' ([\d.]+)%", clamped[0])]
    assert len(reported) == 3
    np.testing.assert_allclose(reported, share, atol=0.02)
    assert "the estimator's feature_range" in clamped[0]


def test_lanes_of_the_default_multiclass_train_the_scheme_fit_keeps():
    # 5 bands of a noisy linear score, where multiclass="auto" keeps one-vs-one: a lane's
    # partial_fit alone would train one-vs-rest, and rank settings the refit does not give
    rng = np.random.default_rng(6)
    X = rng.normal(size=(3000, 6))
    score = X @ rng.normal(size=6) + 0.5 * rng.normal(size=3000)
    y = np.digitize(score, np.quantile(score, [0.2, 0.4, 0.6, 0.8]))
    kw = dict(n_bases=8, interactions=0, value_terms=False, progress=False)
    grid = {"C": [0.3, 3.0]}
    search = StreamSearchCV(AdditiveSVC(**kw), grid, refit=False, random_state=0).fit(X, y)
    template = search.lane_template_  # fit on the training rows chose the scheme
    assert template.multiclass_ == template.multiclass_check_["kept"] == "ovo"
    lane = search.best_estimator_
    assert lane.multiclass_ == "ovo" and lane.n_models_ == 10
    # the same race with the scheme given: the same lanes, the same held-out scores
    given = StreamSearchCV(AdditiveSVC(multiclass="ovo", **kw), grid, refit=False,
                           random_state=0).fit(X, y)
    assert given.lane_template_ is None
    np.testing.assert_array_equal(search.cv_results_["mean_test_score"],
                                  given.cv_results_["mean_test_score"])
    # and the refit of the setting chosen keeps the scheme the lanes trained
    refit = AdditiveSVC(**kw, **search.best_params_).fit(X, y)
    assert refit.multiclass_ == "ovo"


def test_lanes_take_the_pairs_of_named_columns_by_position():
    pd = pytest.importorskip("pandas")
    X, y = _paired_problem(6000)
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d", "e"])
    search = StreamSearchCV(AdditiveSVC(progress=False), {"C": [1.0, 10.0]}, refit=False,
                            chunk_rows=400, min_resource=2000).fit(frame, y)
    names = list(search.lane_template_.feature_names_in_)
    assert names == ["a", "b", "c", "d", "e"]
    expected = tuple((names.index(f), names.index(g))
                     for f, g in search.lane_template_.interactions_)
    assert expected and search.best_estimator_.feature_map_.interactions == expected


def test_lane_template_trains_on_at_most_template_rows(monkeypatch):
    monkeypatch.setattr(search_module, "TEMPLATE_ROWS", 4000)
    X, y = _paired_problem(12_000)
    search = StreamSearchCV(AdditiveSVC(progress=False), {"C": [1.0, 10.0]}, refit=False,
                            chunk_rows=400, min_resource=2000).fit(X, y)
    template = search.lane_template_
    # whole held-out-sized blocks (rows in memory: 6 rows), as many as 4,000 rows hold
    assert template.n_train_ + template.n_calibration_ == 4000 // 6 * 6 == \
        4000 // search.block_rows_ * search.block_rows_
    assert isinstance(search.best_estimator_.feature_map_, BSplinePairMap)


def test_refit_trains_the_best_setting_on_all_rows_with_fit():
    X, y = _additive_split()
    search = StreamSearchCV(AdditiveSVC(progress=False, epochs=2), {"C": [0.01, 1.0]},
                            min_resource=1000).fit(X, y)
    expected = AdditiveSVC(progress=False, epochs=2, **search.best_params_).fit(X, y)
    np.testing.assert_allclose(search.decision_function(X[:200]),
                               expected.decision_function(X[:200]), rtol=1e-6, atol=1e-9)
    assert search.n_passes_ > search.search_passes_
    np.testing.assert_array_equal(search.classes_, expected.classes_)


@pytest.mark.parametrize(("n_candidates", "race"), [(8, [8, 4]), (5, [5, 3]), (3, [3]),
                                                   (2, [])])
def test_final_rung_by_fit_ranks_the_finalists_as_fit_trains_them(n_candidates, race):
    X, y = _ids(6000)
    FitDiffers.fit_ids = []
    grid = {"quality": [float(q) for q in range(n_candidates)]}
    search = StreamSearchCV(FitDiffers(), grid, min_resource=500, chunk_rows=400,
                            refit=False).fit(X, y)
    assert search.final_rung_ == "fit"
    # the race keeps the two best lanes, and fit prefers the worse of them
    assert search.n_candidates_ == [*race, 2]
    assert search.best_params_ == {"quality": float(n_candidates - 2)}
    assert search.best_estimator_.fitted_
    held = set(range(6000)) - FitDiffers.fit_ids[0]
    assert len(FitDiffers.fit_ids) == 2 and FitDiffers.fit_ids[0] == FitDiffers.fit_ids[1]
    assert len(held) == search.n_validation_ and all(i // search.block_rows_ in
                                                      {j // search.block_rows_ for j in held}
                                                      for i in held)
    # the race alone picks the better lane
    lanes = StreamSearchCV(FitDiffers(), grid, min_resource=500, chunk_rows=400,
                           refit=False, final_rung="partial_fit").fit(X, y)
    assert lanes.best_params_ == {"quality": float(n_candidates - 1)}


@pytest.mark.parametrize(("name", "rung"), [("AdditiveSVC", "partial_fit"),
                                          ("MixtureSVC", "fit"),
                                          ("SuperSparseClassifier", "fit"),
                                          ("SuperSparseRegressor", "fit")])
def test_auto_final_rung_follows_whether_lanes_train_like_fit(name, rung):
    import streamlearn.models as models

    search = StreamSearchCV(getattr(models, name)(), {"random_state": [0, 1]})
    assert search._final_rung() == rung
    assert StreamSearchCV(getattr(models, name)(), {}, final_rung="partial_fit")._final_rung() \
        == "partial_fit"


class FitKwargs(FitDiffers):
    """Records the keyword arguments of every ``fit``."""

    calls: ClassVar[list[dict[str, Any]]] = []

    def fit(self, X: Any, y: Any = None, **kwargs: Any) -> FitKwargs:
        FitKwargs.calls.append(kwargs)
        return super().fit(X, y)


def test_only_the_refit_gets_the_checkpoint(tmp_path):
    X, y = _ids(3000)
    FitKwargs.calls = []
    StreamSearchCV(FitKwargs(), {"quality": [0.0, 1.0, 2.0]}, min_resource=500,
                   chunk_rows=300).fit(X, y, checkpoint=tmp_path, nan_policy="raise")
    finalists, refit = FitKwargs.calls[:-1], FitKwargs.calls[-1]
    assert len(finalists) == 2 and all(c == {"nan_policy": "raise"} for c in finalists)
    assert refit == {"checkpoint": tmp_path, "nan_policy": "raise"}


def test_mixture_finalists_are_judged_by_fit():
    from streamlearn.models import MixtureSVC

    X, y = _additive_split(3000)
    search = StreamSearchCV(MixtureSVC(progress=False, epochs=3, n_components=4),
                            {"C": [0.01, 1.0, 100.0]}, min_resource=1000).fit(X, y)
    assert search.final_rung_ == "fit" and search.n_candidates_ == [3, 2]
    finalists = search.rung_scores_[-1]
    # each finalist's score is its fit on the training rows, scored on the held-out rows
    assert search.best_index_ == max(finalists, key=finalists.get)
    # cv_results_ is a table: one entry per candidate in every column
    import pandas as pd

    table = pd.DataFrame(search.cv_results_)
    assert len(table) == 3
    for i, row in table.iterrows():
        assert row["scores_by_rung"] == [scores[i] for scores in search.rung_scores_
                                         if i in scores]
        assert row["mean_test_score"] == row["scores_by_rung"][-1]
    assert search.n_passes_ > search.search_passes_ > 2


def test_bad_inputs_name_the_problem():
    X, y = _ids(2000)
    with pytest.raises(InvalidParameterError, match="partial_fit"):
        StreamSearchCV(GridSearchCV(RowRecorder(), {}), {"quality": [1.0]}).fit(X, y)
    with pytest.raises(ValueError, match="no setting"):
        StreamSearchCV(RowRecorder(), []).fit(X, y)
    with pytest.raises(ValueError, match="nonsense"):
        StreamSearchCV(RowRecorder(), {"nonsense": [1]}).fit(X, y)


def test_sparse_rows_are_refused_before_anything_is_read():
    import scipy.sparse as sp

    from streamlearn.models import SuperSparseClassifier

    X = sp.random(400, 30, density=0.1, format="csr", random_state=0, dtype=np.float32)
    y = np.arange(400) % 2
    with pytest.raises(TypeError, match="partial_fit, which takes dense rows"):
        StreamSearchCV(SuperSparseClassifier(), {"lam": [0.1, 1.0]}).fit(X, y)
    with pytest.raises(TypeError, match="does not train on sparse"):
        StreamSearchCV(AdditiveSVC(embedding="fourier"), {"C": [0.1, 1.0]}).fit(X, y)


def test_a_mixture_races_over_sparse_rows():
    # its lanes' partial_fit gets the race's CSR slices (SparseRows) and opens them
    import scipy.sparse as sp

    from streamlearn.models import MixtureSVC

    rng = np.random.default_rng(5)
    X = sp.random(4000, 20, density=0.2, format="csr", random_state=5, dtype=np.float32)
    X.data = rng.normal(size=X.nnz).astype(np.float32)
    y = X[:, 0].toarray().ravel() - X[:, 1].toarray().ravel() > 0.1
    search = StreamSearchCV(MixtureSVC(), {"C": [0.1, 10.0]}, random_state=0).fit(X, y)
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))
    assert search.score(X, y) > 0.85


@pytest.mark.parametrize("params", [{"embedding": "linear"}, {}])
def test_a_race_over_sparse_rows_is_the_race_over_the_same_rows_written_out(params):
    # AdditiveSVC's partial_fit trains on CSR rows what it trains on the same rows written
    # out with zero_preserving=True: the races, and their choices, are the same
    import scipy.sparse as sp

    rng = np.random.default_rng(4)
    X = sp.random(6000, 20, density=0.2, format="csr", random_state=4, dtype=np.float32)
    X.data = rng.normal(size=X.nnz).astype(np.float32)
    y = (np.sin(2 * X[:, 0].toarray().ravel()) + X[:, 1].toarray().ravel() ** 2 > 0.05)
    grid = {"C": [0.01, 1.0, 100.0]}
    sparse = StreamSearchCV(AdditiveSVC(progress=False, **params), grid,
                            random_state=0).fit(X, y)
    dense = StreamSearchCV(AdditiveSVC(zero_preserving=True, progress=False, **params), grid,
                           random_state=0).fit(X.toarray(), y)
    np.testing.assert_allclose(sparse.cv_results_["mean_test_score"],
                               dense.cv_results_["mean_test_score"], atol=1e-9)
    assert sparse.best_params_ == dense.best_params_
    assert sparse.n_passes_ == dense.n_passes_
    np.testing.assert_allclose(sparse.decision_function(X),
                               dense.decision_function(X.toarray()), atol=1e-5)


def test_parameter_mixing_is_the_weighted_mean_of_learned_arrays():
    a, b = RowRecorder(1.0), RowRecorder(3.0)
    a.coef_, b.coef_ = np.array([1.0, 2.0]), np.array([3.0, 6.0])
    a.rows_, b.rows_ = 10, 30
    mixed = mix_parameters(a, b, 0.25)
    np.testing.assert_allclose(mixed.coef_, 0.25 * a.coef_ + 0.75 * b.coef_)
    assert mixed.rows_ == 10 and a.coef_[0] == 1.0


def test_runs_on_dask_engine(dask_client):
    X, y = _additive_split(4000)
    grid = {"embedding": ["linear", "bspline"]}
    search = StreamSearchCV(AdditiveSVC(progress=False, epochs=1), grid, min_resource=1000,
                            engine=DaskEngine(dask_client), chunk_rows=500).fit(X, y)
    assert search.best_params_ == {"embedding": "bspline"}
    assert search.n_candidates_ == [2, 1]
    assert search.score(X, y) > 0.85


def test_finalists_fit_on_dask_engine(dask_client, tmp_path):
    from streamlearn.models import MixtureSVC

    X, y = _additive_split(3000)
    # stored rows: two held-out chunks of 150 rows, where the two settings' scores differ
    # by more than the lanes' parameter mixing moves them
    stored = _stored(X, y, tmp_path)
    # the sharper gating scale, about tau="auto"'s 16 / D^2 on these rows (4.96): under the
    # softer one that "auto" keeps here (1.24) the two settings' held-out scores lie closer
    # than the lanes' parameter mixing moves them
    mixture = MixtureSVC(progress=False, epochs=2, n_components=3, tau=5.0)
    search = StreamSearchCV(mixture, {"C": [0.01, 1.0]}, min_resource=1000, chunk_rows=500,
                            engine=DaskEngine(dask_client)).fit(*stored)
    local = StreamSearchCV(mixture, {"C": [0.01, 1.0]}, min_resource=1000,
                           chunk_rows=500).fit(*stored)
    assert search.n_candidates_ == [2] and search.final_rung_ == "fit"
    # the finalists trained on the same rows either way, so they rank the settings alike
    assert search.best_params_ == local.best_params_
    rows = pd.read_parquet(stored[0]).drop(columns="y")  # the named columns they trained on
    assert abs(search.score(rows, y) - local.score(rows, y)) < 0.05



def test_balanced_class_weight_reaches_the_lanes_as_the_factors_fit_uses():
    import pandas as pd
    from sklearn.utils.class_weight import compute_class_weight

    X, y = additive_problem(3000, n_features=6, seed=3)
    y = np.where(np.arange(len(y)) % 5 == 0, y, 0)  # about 9 rows of class 0 to 1 of 1
    names = ["a", "b", "c", "d", "e", "f"]
    frame = pd.DataFrame(X, columns=names)
    estimator = AdditiveSVC(class_weight="balanced", epochs=2, tol=None, progress=False)
    search = StreamSearchCV(estimator, {"C": [0.1, 1.0, 10.0, 100.0]}, refit=False,
                            final_rung="partial_fit", random_state=0).fit(frame, y)
    expected = compute_class_weight("balanced", classes=np.unique(y), y=y)
    lane = search.best_estimator_.class_weight
    assert sorted(lane) == [0, 1]
    np.testing.assert_allclose([lane[0], lane[1]], expected)
    assert set(search.best_params_) == {"C"}
    np.testing.assert_array_equal(search.feature_names_in_, names)
    refit = StreamSearchCV(estimator, {"C": [0.1, 1.0, 10.0, 100.0]},
                           final_rung="partial_fit", random_state=0).fit(frame, y)
    assert refit.best_estimator_.class_weight == "balanced"  # fit counts the classes itself


def test_passes_count_the_template_and_the_finalists_against_the_whole_data():
    from streamlearn.data import open_dataset
    from streamlearn.engine.accounting import recording

    X, y = additive_problem(6000, seed=2)
    data = open_dataset(X, target=y)
    # lanes, a lane template trained on some blocks, and finalists trained by fit on the
    # training blocks: every read is of the data itself, so the record counts them all
    for grid, rung in (({"C": [0.1, 1.0, 10.0, 100.0]}, "partial_fit"),
                       ({"C": [0.1, 1.0, 10.0, 100.0]}, "fit")):
        search = StreamSearchCV(AdditiveSVC(progress=False, epochs=2), grid,
                                final_rung=rung, random_state=0)
        with recording() as log:
            search.fit(data)
        assert search.lane_template_ is not None
        assert search.n_passes_ == pytest.approx(log.passes_over(data.n_rows), rel=1e-9)


def test_a_search_is_the_kind_of_its_estimator_and_scores_by_its_scoring():
    from sklearn.base import is_classifier, is_regressor
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import StratifiedKFold, check_cv

    from streamlearn.models import SuperSparseRegressor

    X, y = additive_problem(2000, n_features=6, seed=5)
    classifier = StreamSearchCV(AdditiveSVC(progress=False), {"C": [0.1, 10.0]})
    assert is_classifier(classifier) and not is_regressor(classifier)
    # cross_val_score's folds: stratified for a classifier, as for GridSearchCV
    assert isinstance(check_cv(3, y, classifier=is_classifier(classifier)),
                      StratifiedKFold)
    regressor = StreamSearchCV(SuperSparseRegressor(), {"n_prototypes": [5, 10]})
    assert is_regressor(regressor) and not is_classifier(regressor)

    search = StreamSearchCV(AdditiveSVC(progress=False, tol=None, epochs=2),
                            {"C": [0.1, 10.0]}, scoring="roc_auc", random_state=0,
                            final_rung="partial_fit").fit(X[:1500], y[:1500])
    auc = roc_auc_score(y[1500:], search.best_estimator_.decision_function(X[1500:]))
    assert search.score(X[1500:], y[1500:]) == pytest.approx(auc)
    np.testing.assert_allclose(search.predict_log_proba(X[1500:]),
                               np.log(search.predict_proba(X[1500:])))


def test_a_grid_over_interactions_trains_the_pairs_of_its_settings():
    X, y = _paired_problem(6000)
    search = StreamSearchCV(AdditiveSVC(progress=False, interactions=0),
                            {"interactions": [0, 2]}, refit=False, chunk_rows=400,
                            min_resource=2000).fit(X, y)
    # the estimator as given screens no pair; the setting with two does, in the template
    assert search.lane_template_ is not None and search.lane_template_.interactions == 2
    scores = dict(zip([p["interactions"] for p in search.cv_results_["params"]],
                      search.cv_results_["mean_test_score"], strict=True))
    assert search.best_params_ == {"interactions": 2} and scores[2] > scores[0] + 0.05


def test_one_setting_judged_by_fit_is_its_fit():
    from streamlearn.models import SuperSparseClassifier

    X, y = additive_problem(3000, n_features=6, seed=8)
    search = StreamSearchCV(SuperSparseClassifier(n_prototypes=10), {"lam": [1e-3]},
                            refit=False, final_rung="fit", random_state=0).fit(X, y)
    finalist = search.best_estimator_
    assert hasattr(finalist, "n_passes_")  # trained by fit, not a partial_fit lane
    assert search.search_passes_ >= finalist.n_passes_ * 0.5


def test_scorers_get_weights_as_scikit_learn_gives_them_and_name_missing_classes():
    X, y = additive_problem(3000, n_features=6, seed=9)
    w = np.ones(len(y))
    seen = {}

    def plain(estimator, X, y):  # no sample_weight: called without, as GridSearchCV does
        return float(np.mean(estimator.predict(X) == y))

    def weighted(estimator, X, y, sample_weight=None):
        seen["weights"] = sample_weight is not None
        return float(np.mean(estimator.predict(X) == y))

    grid = {"C": [0.1, 10.0]}
    params = {"progress": False, "epochs": 2, "tol": None}
    StreamSearchCV(AdditiveSVC(**params), grid, scoring=plain,
                   final_rung="partial_fit").fit(X, y, sample_weight=w)
    StreamSearchCV(AdditiveSVC(**params), grid, scoring=weighted,
                   final_rung="partial_fit").fit(X, y, sample_weight=w)
    assert seen["weights"]



def test_a_class_no_held_out_row_holds_is_named(tmp_path):
    X, y = additive_problem(3000, n_features=6, seed=9)
    grid = {"C": [0.1, 10.0]}
    params = {"progress": False, "epochs": 2, "tol": None}
    # stored rows, a class whose rows all lie in the training chunks: log-loss cannot score
    # the rest
    y3 = y.copy()
    y3[:40] = 2
    stored = _stored(X, y3, tmp_path)
    with pytest.raises(ValueError, match=r"no row of the classes \[2\].*shuffle"):
        StreamSearchCV(AdditiveSVC(**params), grid, scoring="neg_log_loss", chunk_rows=100,
                       final_rung="partial_fit", random_state=1).fit(*stored)
    # held in memory, the same rows give held-out rows of class 2: log-loss scores them
    search = StreamSearchCV(AdditiveSVC(**params), grid, scoring="neg_log_loss",
                            chunk_rows=100, final_rung="partial_fit", random_state=1)
    assert np.isfinite(search.fit(X, y3).best_score_)


def test_held_out_rows_stay_within_their_cap_and_bad_settings_fail_before_reading():
    X, y = additive_problem(10_000, n_features=6, seed=10)
    search = StreamSearchCV(AdditiveSVC(progress=False, epochs=1, tol=None), {"C": [1.0]},
                            chunk_rows=500, max_validation_rows=200,
                            final_rung="partial_fit").fit(X, y)
    assert search.n_validation_ <= 200
    for bad, grid in (({"scoring": "accuracyy"}, {"C": [1.0]}), ({}, {"C": [-1.0]})):
        with pytest.raises(InvalidParameterError):
            StreamSearchCV(AdditiveSVC(), grid, **bad).fit("/nonexistent.parquet", "y")


def test_tied_candidates_share_their_rank_as_in_scikit_learn():
    X, y = additive_problem(600, n_features=6, seed=11)
    search = StreamSearchCV(RowRecorder(), {"quality": [1.0, 0.0, 0.0, 0.5]},
                            min_resource=100, factor=2).fit(X, y)
    # the two settings of quality 0 leave the race at its first cut, tied
    reached = search.cv_results_["iter"]
    assert reached[1] == reached[2] < reached[3] <= reached[0]
    # ranked by rung, then score; the tie shares the better place (rankdata's "min")
    assert search.cv_results_["rank_test_score"] == [1, 3, 3, 2]


def test_lanes_take_the_penalty_fit_uses_for_all_training_rows():
    X, y = _additive_split(3000)
    search = StreamSearchCV(AdditiveSVC(progress=False), {"C": [0.5, 2.0]}, chunk_rows=200,
                            refit=False, final_rung="partial_fit", random_state=0).fit(X, y)
    n_train = 3000 - search.n_validation_
    best = search.best_estimator_
    # a lane's partial_fit would take lam from its first chunk of 200 rows: 1 / (C 200)
    assert best.lam_ == pytest.approx(1.0 / (best.C * n_train))


def test_a_scikit_learn_estimator_is_raced_and_refitted_on_the_arrays():
    from sklearn.linear_model import SGDClassifier

    X, y = _additive_split(3000)
    grid = {"alpha": [1e-4, 1e-2]}
    search = StreamSearchCV(SGDClassifier(random_state=0), grid, random_state=0).fit(X, y)
    assert isinstance(search.best_estimator_, SGDClassifier)
    reference = SGDClassifier(random_state=0, **search.best_params_).fit(X, y)
    np.testing.assert_array_equal(search.predict(X), reference.predict(X))
    with pytest.raises(TypeError, match="final_rung='fit'.*SGDClassifier"):
        StreamSearchCV(SGDClassifier(), grid, final_rung="fit").fit(X, y)
    from streamlearn.data import open_dataset

    with pytest.raises(TypeError, match="refit=True fits SGDClassifier.*refit=False"):
        StreamSearchCV(SGDClassifier(), grid).fit(open_dataset(X, target=y))


def test_lanes_read_categorical_columns_as_fit_does():
    # the first slice reaches the lanes as a table of categories: a MixtureSVC lane reads
    # indicator columns as its fit does, and scores close to one-hot logistic regression
    from sklearn.linear_model import LogisticRegression

    from streamlearn.models import MixtureSVC
    from tests.category_problem import category_problem, one_hot

    frame, score = category_problem(4000, 0, k=20)
    test, score_test = category_problem(1000, 1, k=20)
    y, y_test = (score > 0).astype(int), (score_test > 0).astype(int)
    search = StreamSearchCV(MixtureSVC(random_state=0), {"C": [0.1, 1.0]}, refit=False,
                            final_rung="partial_fit", chunk_rows=500,
                            min_resource=1000).fit(frame, y)
    lane = search.best_estimator_
    assert lane.category_indicators_.n_features == 21 and lane.n_features_in_ == 2
    assert lane.categories_["cat"] == tuple(frame["cat"].cat.categories)
    reference = LogisticRegression(max_iter=1000).fit(one_hot(frame), y)
    assert lane.score(test, y_test) >= reference.score(one_hot(test), y_test) - 0.1


@pytest.mark.parametrize("routing", [False, True])
def test_a_pipeline_scores_and_fits_the_search_with_weights_as_with_grid_search(routing):
    import sklearn
    from sklearn.metrics import accuracy_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from streamlearn.models import SuperSparseClassifier

    X, y = additive_problem(1200, n_features=6, seed=12)
    w = np.random.default_rng(12).uniform(0.2, 2.0, len(y))
    grid = {"lam": [0.01, 0.1]}
    with sklearn.config_context(enable_metadata_routing=routing):
        model = SuperSparseClassifier(n_prototypes=10)
        if routing:  # asked for as GridSearchCV's estimator would be
            model.set_score_request(sample_weight=True)
        search = StreamSearchCV(model, grid)
        if routing:
            search.set_fit_request(sample_weight=True)
        scaler = StandardScaler().set_fit_request(sample_weight=False) if routing \
            else StandardScaler()
        pipe = make_pipeline(scaler, search)
        fit_weights = {"sample_weight": w} if routing else \
            {"streamsearchcv__sample_weight": w}
        pipe.fit(X, y, **fit_weights)
        Xs = pipe[0].transform(X)
        best = pipe[-1].best_estimator_
        # unweighted and weighted scores: the accuracy of the best model's predictions
        assert pipe.score(X, y) == pytest.approx(accuracy_score(y, best.predict(Xs)))
        assert pipe.score(X, y, sample_weight=w) == pytest.approx(
            accuracy_score(y, best.predict(Xs), sample_weight=w))
        # the weights reached the search's own fit: the same search fitted directly
        direct = StreamSearchCV(SuperSparseClassifier(n_prototypes=10), grid).fit(
            Xs, y, sample_weight=w)
        np.testing.assert_allclose(best.predict_proba(Xs),
                                   direct.best_estimator_.predict_proba(Xs), rtol=1e-5)
        assert pipe[-1].cv_results_["mean_test_score"] == pytest.approx(
            direct.cv_results_["mean_test_score"])
    if routing:
        with sklearn.config_context(enable_metadata_routing=True):
            unrequested = make_pipeline(StandardScaler(), StreamSearchCV(
                SuperSparseClassifier(n_prototypes=10), grid)).fit(X, y)
            unrequested.score(X, y)  # no weights: nothing to route
            with pytest.raises(Exception, match="set_score_request"):
                unrequested.score(X, y, sample_weight=w)


def _searches() -> list[StreamSearchCV]:
    from streamlearn.models import MixtureSVC, SuperSparseClassifier, SuperSparseRegressor

    return [StreamSearchCV(AdditiveSVC(progress=False), {"C": [0.1, 1.0]}),
            StreamSearchCV(MixtureSVC(), {"C": [0.1, 1.0]}),
            StreamSearchCV(SuperSparseClassifier(), {"lam": [0.01, 0.1]}),
            StreamSearchCV(SuperSparseRegressor(), {"lam": [0.01, 0.1]})]


# a classifier and a regressor: the search's own code is the same for every model, whose
# own checks run in test_common.py
@parametrize_with_checks([_searches()[0], _searches()[3]],
                         expected_failed_checks=lambda search: dict(
                             search._expected_failed_checks))
def test_searches_pass_scikit_learn_estimator_checks(estimator, check):
    check(estimator)


def test_sparse_tag_says_what_fit_takes():
    import scipy.sparse as sp
    from sklearn.utils import get_tags

    X, y = additive_problem(400, n_features=6, seed=13)
    for search in _searches():
        # the models' own fit streams sparse rows; the lanes' partial_fit does only for
        # AdditiveSVC and MixtureSVC
        from streamlearn.models import MixtureSVC

        assert get_tags(search.estimator).input_tags.sparse
        lanes_take_sparse = isinstance(search.estimator, AdditiveSVC | MixtureSVC)
        assert get_tags(search).input_tags.sparse == lanes_take_sparse
        if lanes_take_sparse:
            assert search.fit(sp.csr_matrix(X), y).score(sp.csr_matrix(X), y) > 0.7
        else:
            with pytest.raises(TypeError, match="takes dense rows"):
                search.fit(sp.csr_matrix(X), y)
    with pytest.raises(ValueError, match="n_samples = 1"):
        from streamlearn.models import SuperSparseRegressor

        StreamSearchCV(SuperSparseRegressor(), {"lam": [0.1]}).fit(X[:1], [0.5])


def test_a_raced_scikit_learn_model_has_feature_names_where_its_fit_would():
    import warnings

    import pandas as pd
    from sklearn.linear_model import SGDClassifier

    X, y = additive_problem(2000, n_features=6, seed=14)
    frame = pd.DataFrame(X, columns=[f"c{j}" for j in range(X.shape[1])])
    for data in (X, frame):
        search = StreamSearchCV(SGDClassifier(loss="log_loss", random_state=0),
                                {"alpha": [1e-4, 1e-2]}, refit=False).fit(data, y)
        reference = SGDClassifier(loss="log_loss").fit(data, y)
        best = search.best_estimator_
        assert hasattr(best, "feature_names_in_") == hasattr(reference, "feature_names_in_")
        assert hasattr(search, "feature_names_in_") == hasattr(reference, "feature_names_in_")
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)  # no feature-name warning
            search.predict(data)
    np.testing.assert_array_equal(best.feature_names_in_, reference.feature_names_in_)
    # a streamlearn lane the same: no names of an array's columns
    from streamlearn.models import SuperSparseClassifier

    lane = StreamSearchCV(SuperSparseClassifier(n_prototypes=10), {"lam": [1e-3, 1e-1]},
                          refit=False, final_rung="partial_fit").fit(X, y)
    assert not hasattr(lane.best_estimator_, "feature_names_in_")
    assert not hasattr(lane, "feature_names_in_")


class NanLater(RowRecorder):
    """Scores ``quality``, but NaN once it has trained on more than ``after`` rows."""

    def __init__(self, quality: float = 0.0, after: int = 10**9) -> None:
        super().__init__(quality)
        self.after = after

    def score(self, X: Any, y: Any = None, sample_weight: Any = None) -> float:
        return float("nan") if getattr(self, "rows_", 0) > self.after else float(self.quality)


def test_a_nan_score_ranks_last_as_in_grid_search_wherever_it_stands_in_the_grid():
    X, y = _ids(3000)
    for grid in ({"quality": [np.nan, 1.0, 3.0, 2.0]}, {"quality": [1.0, 3.0, 2.0, np.nan]}):
        with pytest.warns(UserWarning, match=r"NaN on the held-out rows for 1 of the 4"):
            search = StreamSearchCV(RowRecorder(), grid, min_resource=500,
                                    refit=False).fit(X, y)
        expected = GridSearchCV(RowRecorder(), grid, cv=3, error_score="raise")
        with pytest.warns(UserWarning, match="non-finite"):
            expected.fit(X, y)
        assert search.best_params_ == expected.best_params_ == {"quality": 3.0}
        assert search.cv_results_["rank_test_score"] == \
            expected.cv_results_["rank_test_score"].tolist()
    # NaN at the last rung: a setting with a number, dropped before, is the choice
    grid = {"quality": [3.0, 1.0], "after": [2000]}  # rungs end at 1350 and 2700 rows
    with pytest.warns(UserWarning, match="they rank last"):
        search = StreamSearchCV(NanLater(), grid, min_resource=500, refit=False).fit(X, y)
    assert search.cv_results_["iter"] == [1, 0]
    assert search.best_params_["quality"] == 1.0 and search.best_score_ == 1.0
    assert search.cv_results_["rank_test_score"] == [2, 1]
    with pytest.warns(UserWarning, match="every setting: the race could not rank them"):
        search = StreamSearchCV(NanLater(), {"quality": [1.0, 2.0], "after": [0]},
                                min_resource=500, refit=False).fit(X, y)
    assert np.isnan(search.best_score_)

    assert np.isnan(search.best_score_)


def test_a_rung_that_ends_inside_a_slice_leaves_no_row_of_it_untrained():
    # one chunk of 4,000 rows: the first rung ends at 1,800 rows, inside the first slice
    # of 4,096; the rest of the slice goes to the next rung in the same pass
    X, y = _ids(4000)
    RowRecorder.trained_ids = set()
    search = StreamSearchCV(RowRecorder(), {"quality": [0.0, 1.0]}, min_resource=500,
                            refit=False).fit(X, y)
    n_train = 4000 - search.n_validation_
    assert search.budgets_ == [n_train // 2, n_train]
    assert len(RowRecorder.trained_ids) == n_train == search.best_estimator_.rows_
    assert search.search_passes_ == pytest.approx(1 + search.n_validation_ / 4000)


def test_rows_sorted_by_label_give_held_out_rows_of_every_class_or_a_warning(tmp_path):
    X, _ = _ids(4000)
    y = np.repeat([0, 1, 2, 3], 1000)  # rows sorted by label
    grid = {"quality": [0.0, 1.0]}
    # held in memory: 400 held-out rows in 200 blocks of 2, one in each 20 rows, so that
    # every class has a hundred
    RowRecorder.trained_ids = set()
    StreamSearchCV(RowRecorder(), grid, min_resource=500, refit=False).fit(X, y)
    held = np.setdiff1d(np.arange(4000), list(RowRecorder.trained_ids))
    assert np.array_equal(np.unique(y[held], return_counts=True)[1], [100] * 4)
    # stored: the held-out rows are two chunks of 200 rows, which hold two classes at most;
    # a warning names the others, those of the rows trained on
    RowRecorder.trained_ids = set()
    search = StreamSearchCV(RowRecorder(), grid, min_resource=500, refit=False,
                            chunk_rows=200)
    with pytest.warns(UserWarning, match="shuffle the rows") as caught:
        search.fit(*_stored(X, y, tmp_path))
    held = np.setdiff1d(np.arange(4000), list(RowRecorder.trained_ids))
    absent = sorted(set(range(4)) - set(y[held].tolist()))
    assert absent and f"hold no row of the classes {absent}" in str(caught[0].message)


class Breaks(RowRecorder):
    """Scores ``quality``; with ``broken``, its ``partial_fit`` raises once it has trained
    on more than ``after`` rows (and its ``fit``), or its score raises
    (``broken="score"``), or its ``fit`` alone (``broken="fit"``)."""

    def __init__(self, quality: float = 0.0, broken: Any = False, after: int = 0) -> None:
        super().__init__(quality)
        self.broken = broken
        self.after = after

    def partial_fit(self, X: Any, y: Any, classes: Any = None,
                    sample_weight: Any = None) -> Breaks:
        if self.broken is True and getattr(self, "rows_", 0) >= self.after:
            raise ValueError(f"no model at quality {self.quality}")
        return super().partial_fit(X, y, classes, sample_weight)

    def fit(self, X: Any, y: Any = None) -> Breaks:
        if self.broken == "fit":
            raise RuntimeError("the refit broke")
        if self.broken is True:
            raise ValueError(f"no model at quality {self.quality}")
        return super().fit(X, y)

    def score(self, X: Any, y: Any = None, sample_weight: Any = None) -> float:
        if self.broken == "score":
            raise ZeroDivisionError("no score")
        return super().score(X, y, sample_weight)


def test_a_failing_setting_gets_error_score_and_leaves_the_race_as_in_grid_search():
    from sklearn.exceptions import FitFailedWarning

    X, y = _ids(3000)
    grid = [{"quality": [3.0], "broken": [True]}, {"quality": [1.0, 2.0]},
            {"quality": [4.0], "broken": ["score"]}]
    with pytest.warns(FitFailedWarning) as caught:
        search = StreamSearchCV(Breaks(), grid, min_resource=500).fit(X, y)
    messages = [str(w.message) for w in caught]  # no NaN-score warning besides
    assert len(messages) == 2 and all(w.category is FitFailedWarning for w in caught)
    assert any("'quality': 3.0" in m and "no model at quality 3.0" in m for m in messages)
    assert any("'quality': 4.0" in m and "ZeroDivisionError: no score" in m for m in messages)
    with pytest.warns(FitFailedWarning), pytest.warns(UserWarning, match="Scoring failed"):
        expected = GridSearchCV(Breaks(), grid, cv=3).fit(X, y)
    assert search.best_params_ == expected.best_params_ == {"quality": 2.0}
    scores = search.cv_results_["mean_test_score"]
    assert np.isnan(scores[0]) and np.isnan(scores[3])
    assert search.cv_results_["rank_test_score"] == \
        expected.cv_results_["rank_test_score"].tolist() == [3, 2, 1, 3]
    # a failure at a later rung: the setting leaves there, with its earlier scores kept
    with pytest.warns(FitFailedWarning, match="failed at rung 1"):
        search = StreamSearchCV(Breaks(), {"quality": [3.0, 1.0], "broken": [True],
                                           "after": [1000]}, min_resource=500,
                                refit=False).fit(X, y)
    assert [s[0] for s in search.cv_results_["scores_by_rung"]] == [3.0, 1.0]
    # a number is the failed setting's score; "raise" raises
    with pytest.warns(FitFailedWarning, match="error_score=-1.0"):
        search = StreamSearchCV(Breaks(), grid, min_resource=500, error_score=-1.0).fit(X, y)
    assert search.cv_results_["mean_test_score"][0] == -1.0
    with pytest.raises(ValueError, match="no model at quality 3.0"):
        StreamSearchCV(Breaks(), grid, min_resource=500, error_score="raise").fit(X, y)


def test_every_setting_failing_or_the_refit_failing_raises():
    from sklearn.exceptions import FitFailedWarning

    X, y = _ids(3000)
    with pytest.warns(FitFailedWarning), pytest.raises(
            ValueError, match=r"all 3 settings failed(.|\n)*\{'broken': True, 'quality': 1.0\}"
                              r": ValueError: no model at quality 1.0"):
        StreamSearchCV(Breaks(), [{"quality": [1.0, 2.0], "broken": [True]},
                                  {"quality": [3.0], "broken": ["score"]}],
                       min_resource=500).fit(X, y)
    # the best setting's refit raises what its fit raises
    with pytest.raises(RuntimeError, match="the refit broke"):
        StreamSearchCV(Breaks(), {"quality": [1.0, 2.0], "broken": ["fit"]},
                       min_resource=500).fit(X, y)


def test_a_finalist_whose_fit_fails_leaves_the_choice_to_the_others():
    from sklearn.exceptions import FitFailedWarning

    class FitBreaks(FitDiffers):
        def __init__(self, quality: float = 0.0, broken: bool = False) -> None:
            super().__init__(quality)
            self.broken = broken

        def fit(self, X: Any, y: Any = None) -> FitBreaks:
            if self.broken:
                raise ValueError("this finalist cannot be fitted")
            return super().fit(X, y)

    X, y = _ids(3000)
    # the lanes keep 3.0 (whose fit fails) and 2.0, fitted it scores -2.0
    grid = [{"quality": [3.0], "broken": [True]}, {"quality": [1.0, 2.0]}]
    with pytest.warns(FitFailedWarning, match="cannot be fitted"):
        search = StreamSearchCV(FitBreaks(), grid, min_resource=500, refit=False).fit(X, y)
    assert search.n_candidates_ == [3, 2]
    assert search.best_params_ == {"quality": 2.0} and search.best_score_ == -2.0
    assert np.isnan(search.cv_results_["mean_test_score"][0])


def test_lanes_skip_their_importances_and_the_kept_one_makes_them() -> None:
    """A lane's term importances would be thrown away with every lane that loses: inside
    the race ``partial_fit`` skips them, and the model kept without a refit makes them
    over the held-out rows. Reference: the centred mean absolute term contributions."""
    from sklearn.datasets import make_classification

    X, y = make_classification(1200, 6, n_informative=2, n_redundant=0, random_state=1)
    X = X.astype(np.float32)
    model = AdditiveSVC(interactions=0, progress=False)
    with racing():
        model.partial_fit(X[:800], y[:800], classes=[0, 1])
    assert not hasattr(model, "feature_importances_")
    finish_lane(model, X[800:])
    terms = model.term_contributions(X[800:])
    expected = np.abs(terms - terms.mean(axis=0)).mean(axis=0).mean(axis=-1)
    np.testing.assert_allclose(model.feature_importances_, expected, rtol=1e-9)
    kept = model.feature_importances_.copy()
    finish_lane(model, X[:100])  # a model with its importances keeps them
    np.testing.assert_array_equal(model.feature_importances_, kept)
    search = StreamSearchCV(AdditiveSVC(interactions=0, progress=False),
                            {"C": [0.1, 1.0]}, refit=False).fit(X, y)
    assert search.best_estimator_.feature_importances_.shape == (6,)
