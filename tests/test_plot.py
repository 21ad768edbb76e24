"""Pictures of fitted models: each drawn from the model's own tables, and `explain`."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.image as mpimg
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from streamlearn import plot
from streamlearn.cli import cli
from streamlearn.io.model_file import load_model, save_model
from streamlearn.models import (
    AdditiveSVC,
    MixtureSVC,
    ShareBoostClassifier,
    SuperSparseClassifier,
)


def _problem(n: int = 3000, d: int = 5, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, d)).astype(np.float32)
    return X, (np.sin(3 * X[:, 0]) + 2 * X[:, 1] * X[:, 2] > 0).astype(np.int64)


@pytest.fixture(scope="module")
def additive() -> tuple[AdditiveSVC, np.ndarray]:
    X, y = _problem()
    return AdditiveSVC(interactions=[(1, 2)]).fit(X, y), X


def test_shape_functions_draw_the_models_curves_centred(additive) -> None:
    model, X = additive
    fig = plot.shape_functions(model, X, features=["x0", "x3"], n_points=50)
    table = model.shape_functions(n_points=50)
    # the curves' axes first, then the density axes twinned with them
    for ax, name in zip(fig.axes[:2], ["x0", "x3"], strict=True):
        line = ax.lines[0]
        expected = table[table.feature == name].contribution.to_numpy()
        np.testing.assert_allclose(line.get_ydata(), expected - expected.mean(), atol=1e-12)
        assert ax.get_title() == name
    # the density axis under the first curve holds a histogram of that feature
    heights = sum(p.get_height() for p in fig.axes[2].patches)
    assert heights == X.shape[0]
    plt.close(fig)


def test_a_table_with_a_categorical_column_draws_numbers_on_numeric_axes() -> None:
    """With a categorical feature beside numeric ones, the table the model was fitted on
    draws: the numeric curves on numeric axes with their rows' histogram, the categorical
    feature as one point per category (its values coded as fit codes them)."""
    rng = np.random.default_rng(4)
    frame = pd.DataFrame({"size": rng.normal(size=2000),
                          "colour": rng.choice(["red", "blue", "green"], 2000)})
    y = ((frame["size"] > 0) ^ (frame["colour"] == "red")).astype(int)
    model = AdditiveSVC(interactions=0).fit(frame, y)
    fig = plot.shape_functions(model, frame, features=["size", "colour"], n_points=40)
    table = model.shape_functions(n_points=40)
    size_axis, colour_axis = fig.axes[:2]
    grid = table[(table.feature == "size") & (table.model == table.model.iloc[0])].value
    np.testing.assert_allclose(size_axis.lines[0].get_xdata(), grid.to_numpy(float))
    density = next(ax for ax in fig.axes[2:] if ax.patches)
    assert sum(p.get_height() for p in density.patches) == len(frame)
    ticks = [t.get_text() for t in colour_axis.get_xticklabels()]
    assert ticks == ["blue", "green", "red"]
    plt.close(fig)


def test_importances_bars_are_the_largest_importances(additive) -> None:
    model, _ = additive
    fig = plot.importances(model, top=3)
    widths = [p.get_width() for p in fig.axes[0].patches]
    every = np.concatenate([model.feature_importances_, model.interaction_importances_])
    np.testing.assert_allclose(widths, np.sort(every)[::-1][:3])
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels[0] in ("x0", "x1 x x2")
    plt.close(fig)


def test_interaction_surface_heat_map_is_the_pair_table(additive) -> None:
    model, _ = additive
    fig = plot.interaction_surfaces(model, n_points=7)
    table = model.interaction_surfaces(n_points=7)
    Z = table.contribution.to_numpy().reshape(7, 7)
    image = fig.axes[0].images[0].get_array()
    np.testing.assert_allclose(np.asarray(image), (Z - Z.mean()).T, atol=1e-12)
    plt.close(fig)
    with pytest.raises(ValueError, match="no pair terms"):
        plot.interaction_surfaces(AdditiveSVC(interactions=0).fit(*_problem(500)))


def test_mixture_regions_are_its_predictions_on_two_features() -> None:
    X = np.random.default_rng(3).uniform(-1, 1, (2000, 2)).astype(np.float32)
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    model = MixtureSVC(random_state=0).fit(X, y)
    fig = plot.mixture(model, X, n_points=20)
    assert len(fig.axes) == 2
    sizes = fig.axes[0].lines[0].get_ydata()
    np.testing.assert_allclose(sizes, np.sort(model.xi_[0])[::-1])
    plt.close(fig)


def test_shareboost_path_and_chosen_pixels() -> None:
    rng = np.random.default_rng(1)
    X = rng.normal(size=(1500, 16)).astype(np.float32)
    y = np.argmax(X[:, [3, 7, 12]], axis=1)
    # the family the defaults keep here, without the other two beside it on five folds
    model = ShareBoostClassifier(features="linear").fit(X, y)
    fig = plot.shareboost(model)
    path = fig.axes[0].lines[0].get_ydata()
    np.testing.assert_allclose(path, model.path_["train_error"])
    counts = np.asarray(fig.axes[1].images[0].get_array()).ravel()
    assert set(np.flatnonzero(counts)) == set(model.selected_features_.tolist())
    plt.close(fig)


def test_shareboost_stumps_are_labelled_by_their_feature_and_the_kept_round_marked() -> None:
    """A stump column is feature * n_thresholds + bin: its label names that feature and
    threshold (not the column index modulo the features), and the kept line sits at the
    round whose selection holds the kept columns (rounds may add several)."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(2000, 5)).astype(np.float32)
    y = (X[:, 0] + 0.6 * X[:, 1] > 0).astype(int)
    model = ShareBoostClassifier(features="stumps", random_state=0).fit(X, y)
    fig = plot.shareboost(model)
    labels = [t.get_text() for t in fig.axes[1].get_yticklabels()]
    features, thresholds = model.family_.split(model.selected_features_[:len(labels)])
    assert labels == [f"x{f} <= {t:.4g}" for f, t in zip(features, thresholds, strict=True)]
    kept = fig.axes[0].lines[-1].get_xdata()[0]
    selected = model.path_["n_selected"]
    assert selected[kept] >= model.n_iter_ and (kept == 0 or selected[kept - 1] < model.n_iter_)
    plt.close(fig)


def test_prototypes_as_images_when_features_are_a_square() -> None:
    rng = np.random.default_rng(2)
    X = rng.normal(size=(800, 16)).astype(np.float32)
    y = (X[:, 0] + X[:, 5] > 0).astype(int)
    model = SuperSparseClassifier(n_prototypes=6).fit(X, y)
    fig = plot.prototypes(model)
    shown = [np.asarray(ax.images[0].get_array()) for ax in fig.axes if ax.images]
    assert len(shown) == model.n_prototypes_
    strongest = int(np.argmax(np.abs(model.dual_coef_)))
    np.testing.assert_allclose(shown[0], model.prototypes_[strongest].reshape(4, 4))
    plt.close(fig)


def test_explain_writes_pictures_and_a_page_from_a_saved_model(additive, tmp_path) -> None:
    model, X = additive
    path = save_model(model, tmp_path / "m.slm")
    index = plot.explain(load_model(path), tmp_path / "report", X[:500])
    names = sorted(p.name for p in index.parent.glob("*.png"))
    assert names == ["importances.png", "interaction_surfaces.png", "shape_functions.png"]
    for name in names:
        image = mpimg.imread(index.parent / name)
        assert image.ndim == 3 and image.shape[0] > 100 and image.shape[1] > 100
    page = index.read_text()
    assert all(f'src="{n}"' in page for n in names)
    assert "AdditiveSVC" in page and "interactions_" in page
    # the scheme of the binary models is among the headline values
    assert page.index("multiclass_") < page.index("<img")


def test_explain_command_reads_a_sample_of_the_data(additive, tmp_path: Path) -> None:
    model, X = additive
    save_model(model, tmp_path / "m.slm")
    pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])]).to_parquet(tmp_path / "d.parquet")
    result = CliRunner().invoke(cli, ["explain", str(tmp_path / "m.slm"),
                                      str(tmp_path / "d.parquet"), "--out",
                                      str(tmp_path / "out"), "--quiet"])
    assert result.exit_code == 0, result.output
    assert "index.html" in result.output
    assert (tmp_path / "out" / "shape_functions.png").exists()


def test_a_mapped_feature_is_drawn_on_an_asinh_axis_with_bins_even_in_the_map() -> None:
    rng = np.random.default_rng(4)
    X = np.column_stack([rng.lognormal(0.0, 2.0, 4000), rng.normal(size=4000)])
    y = (np.log(X[:, 0]) + X[:, 1] > 0).astype(int)
    model = AdditiveSVC(interactions=0, random_state=0).fit(X, y)
    t = model.feature_transform_
    assert t.features.tolist() == [0]
    fig = plot.shape_functions(model, X, features=[0, 1])
    curve0, curve1, density0 = fig.axes[0], fig.axes[1], fig.axes[2]
    assert curve0.get_xscale() == "asinh" and curve1.get_xscale() == "linear"
    edges = np.array([p.get_x() for p in density0.patches])
    mapped = np.arcsinh((edges - t.centre[0]) / t.scale[0])
    np.testing.assert_allclose(np.diff(mapped), np.diff(mapped)[0], rtol=1e-3)
    assert sum(p.get_height() for p in density0.patches) == X.shape[0]
    plt.close(fig)


def test_mixture_centres_are_drawn_in_the_features_units() -> None:
    rng = np.random.default_rng(4)
    X = (rng.normal(size=(2000, 2)) * [50.0, 20.0] + [1000.0, -500.0]).astype(np.float32)
    y = ((X[:, 0] - 1000) * (X[:, 1] + 500) > 0).astype(int)
    model = MixtureSVC(random_state=0).fit(X, y)
    fig = plot.mixture(model, n_points=10)  # no rows: the range comes from the centres
    drawn = fig.axes[1].collections[-1].get_offsets()
    active = np.asarray(model.xi_).reshape(-1) > 0
    expected = np.asarray(model.centers_).reshape(-1, 2)[active] * model.scale_ + model.shift_
    np.testing.assert_allclose(np.asarray(drawn), expected, rtol=1e-5)
    plt.close(fig)
    # a categorical feature has no regions over a grid: the sizes alone
    frame = pd.DataFrame({"x": X[:, 0], "c": np.where(y == 1, "a", "b")})
    fig = plot.mixture(MixtureSVC(random_state=0).fit(frame, y), frame)
    assert len(fig.axes) == 1
    plt.close(fig)


def test_integer_column_names_sparse_rows_and_stale_pictures(additive, tmp_path) -> None:
    import scipy.sparse as sp

    X, y = _problem(1000, 3)
    frame = pd.DataFrame(X)  # columns 0, 1, 2, kept by the model as "0", "1", "2"
    model = AdditiveSVC(interactions=0).fit(frame, y)
    fig = plot.shape_functions(model, frame)
    plt.close(fig)
    with pytest.raises(TypeError, match="dense rows"):
        plot.shape_functions(model, sp.csr_matrix(X))
    with pytest.raises(ValueError, match="no feature to draw"):
        plot.shape_functions(model, features=[])
    # a report written over another model's keeps none of its pictures
    plot.explain(additive[0], tmp_path / "r")
    assert (tmp_path / "r" / "interaction_surfaces.png").exists()
    plot.explain(MixtureSVC(random_state=0).fit(X, y), tmp_path / "r")
    assert sorted(p.stem for p in (tmp_path / "r").glob("*.png")) == ["importances", "mixture"]


def test_surface_cells_are_labelled_by_their_grid_values() -> None:
    rng = np.random.default_rng(6)
    heavy = rng.standard_t(1.5, 3000)
    colour = rng.choice(["u", "v", "w"], 3000)
    y = ((heavy > 0) ^ (colour == "v")).astype(int)
    frame = pd.DataFrame({"heavy": heavy, "colour": colour})
    model = AdditiveSVC(interactions=[("heavy", "colour")]).fit(frame, y)
    fig = plot.interaction_surfaces(model, n_points=9)
    ax = fig.axes[0]
    table = model.interaction_surfaces(n_points=9)
    a = list(dict.fromkeys(table.value_a))
    b = list(dict.fromkeys(table.value_b))
    assert [t.get_text() for t in ax.get_yticklabels()] == [str(v) for v in b]
    shown = [float(t.get_text().replace("\u2212", "-")) for t in ax.get_xticklabels()]
    at = ax.get_xticks().astype(int)
    np.testing.assert_allclose(shown, [a[i] for i in at], rtol=5e-3)
    plt.close(fig)


def _one_hot_names(frame: pd.DataFrame) -> list[str]:
    """The columns a model reading a column of more than two categories as indicators
    reads: pandas' dummies in the column's place, named ``"<column>=<category>"``."""
    names: list[str] = []
    for name in frame.columns:
        column = frame[name]
        if not pd.api.types.is_numeric_dtype(column) and column.nunique() > 2:
            names += list(pd.get_dummies(column, prefix=name, prefix_sep="=").columns)
        else:
            names.append(name)
    return names


def _table_with_categories(n: int = 1500, seed: int = 5) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"x0": rng.normal(size=n),
                          "c": rng.choice([f"v{i:02d}" for i in range(30)], n),
                          "x1": rng.normal(size=n),
                          "d": rng.choice(["a", "b", "e", "f"], n),
                          "x2": rng.normal(size=n)})
    effect = dict(zip(sorted(frame.c.unique()), rng.normal(0, 2, 30), strict=True))
    y = (frame.x0 + frame.c.map(effect) + 2 * (frame.d == "b") > 0).astype(int).to_numpy()
    return frame, y


def test_shareboost_on_indicator_columns_is_labelled_by_the_columns_read(tmp_path) -> None:
    """``selected_features_`` counts the columns read (a categorical column's indicators
    in its place): ``explain`` draws the model, and each chosen column is labelled by its
    indicator's name, as pandas names its dummy column."""
    frame, y = _table_with_categories()
    frame.assign(label=y).to_parquet(tmp_path / "tr.parquet")
    runner = CliRunner()
    result = runner.invoke(cli, ["train", str(tmp_path / "tr.parquet"), "-t", "label", "-m",
                                 "shareboost", "-o", str(tmp_path / "sb.slm"), "--quiet",
                                 # linear columns: a column read is a column chosen; a
                                 # fixed number of rounds: no folds of the 1,500 rows to
                                 # choose it on (2,148 passes, 156 with twelve rounds)
                                 "--param", "features=linear", "--param", "n_rounds=12"])
    assert result.exit_code == 0, result.output
    result = runner.invoke(cli, ["explain", str(tmp_path / "sb.slm"),
                                 str(tmp_path / "tr.parquet"), "--out",
                                 str(tmp_path / "rep"), "--quiet"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "rep" / "shareboost.png").exists()
    model = load_model(tmp_path / "sb.slm")
    fig = plot.shareboost(model)
    labels = [t.get_text() for t in fig.axes[1].get_yticklabels()]
    read = _one_hot_names(frame)
    assert len(read) == 3 + 30 + 4  # not a square: drawn as bars, not as an image
    assert labels == [read[f] for f in model.selected_features_[:len(labels)]]
    assert any("=" in label for label in labels)
    plt.close(fig)


def test_prototypes_on_indicator_columns_are_labelled_by_the_columns_read() -> None:
    """``prototypes_`` are over the columns read: the heat map's columns are the
    indicators' names in their column's place, as pandas names its dummy columns."""
    frame, y = _table_with_categories(600)
    frame = frame[["x0", "d", "x1"]]  # 6 columns read, 3 given
    model = SuperSparseClassifier(n_prototypes=6).fit(frame, y)
    fig = plot.prototypes(model)
    drawn = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert drawn == _one_hot_names(frame) == ["x0", "d=a", "d=b", "d=e", "d=f", "x1"]
    assert np.asarray(fig.axes[0].images[0].get_array()).shape[1] == len(drawn)
    plt.close(fig)


def test_one_vs_one_curves_beyond_the_line_cap_are_chosen_or_said_left_out() -> None:
    # six classes one-vs-one: 15 binary models, more than MAX_LINES curves per feature
    rng = np.random.default_rng(3)
    X = rng.normal(size=(1800, 2)).astype(np.float32)
    score = X @ np.array([1.0, 0.5]) + 0.3 * rng.normal(size=1800)
    y = np.digitize(score, np.quantile(score, np.linspace(0, 1, 7)[1:-1]))
    model = AdditiveSVC(multiclass="ovo", n_bases=8, interactions=0, value_terms=False,
                        progress=False).fit(X, y)
    table = model.shape_functions(n_points=30)
    labels = list(dict.fromkeys(table.model))
    assert len(labels) == 15 > plot.MAX_LINES
    fig = plot.shape_functions(model, features=["x0"], n_points=30)
    assert len(fig.axes[0].lines) == plot.MAX_LINES + 1  # the curves and the zero line
    assert fig.axes[0].get_legend().get_title().get_text() == "model (5 of 15 not drawn)"
    plt.close(fig)
    chosen = labels[-2:]
    fig = plot.shape_functions(model, features=["x0"], n_points=30, models=chosen)
    drawn = [line for line in fig.axes[0].lines if line.get_label() in chosen]
    expected = table[(table.feature == "x0") & (table.model == chosen[1])].contribution
    np.testing.assert_allclose(drawn[1].get_ydata(), expected - expected.mean(), atol=1e-12)
    assert len(drawn) == 2 and len(fig.axes[0].lines) == 3
    plt.close(fig)
    with pytest.raises(ValueError, match="names no binary model"):
        plot.shape_functions(model, models=["no such pair"])
