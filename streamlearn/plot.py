"""Pictures of what a fitted model learned (matplotlib, the ``plot`` extra).

Every function takes a fitted estimator and returns a :class:`matplotlib.figure.Figure`;
:func:`explain` writes the pictures that suit a model, with an ``index.html`` that shows them
beside the model's summary (what ``streamlearn explain`` runs). The numbers behind each
picture come from the model's own tables (:meth:`AdditiveSVC.shape_functions`,
:meth:`AdditiveSVC.interaction_surfaces`, ``feature_importances_``, ``path_``, ...), so a
picture shows nothing a user cannot read as data.

Install with ``pip install streamlearn[plot]``.
"""

from __future__ import annotations

import html
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from streamlearn.models.base import feature_names_of
from streamlearn.warning_origin import library_rows

#: Features drawn by :func:`shape_functions` unless told (the most important first).
MAX_SHAPES = 12
#: Bars drawn by :func:`importances`.
MAX_BARS = 20
#: Lines (binary models) drawn per feature in :func:`shape_functions`.
MAX_LINES = 10
#: Learned values shown above the pictures of :func:`explain` (when the model has them).
HEADLINE = ("n_features_in_", "n_train_", "n_iter_", "n_passes_", "multiclass_", "interactions_",
            "value_terms_", "n_active_components_", "n_prototypes_", "l2_", "C_", "tau_",
            "gamma_")


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError as error:  # pragma: no cover - depends on the installation
        raise ImportError("streamlearn.plot needs matplotlib: pip install "
                          "'streamlearn[plot]'") from error
    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def _grid(n: int, width: float = 3.2, height: float = 2.6) -> tuple[Any, np.ndarray]:
    plt = _pyplot()
    cols = min(4, max(1, n))
    rows = max(1, math.ceil(n / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False)
    for ax in axes.ravel()[n:]:
        ax.set_visible(False)
    return fig, axes.ravel()


def _check_fitted(model: Any, *names: str) -> None:
    missing = [n for n in names if not hasattr(model, n)]
    if missing:
        raise ValueError(f"{type(model).__name__} has no {', '.join(missing)}: fit it first "
                         "(or it is not a model this picture is for)")


def _values(X: Any, model: Any) -> np.ndarray | None:
    """Rows as a float array in the model's feature order (a table by its column names);
    a categorical feature's values as their positions in the model's category lists (NaN
    for a value the model has not seen), as ``fit`` codes them."""
    if X is None:
        return None
    if hasattr(X, "tocsr"):  # scipy.sparse
        raise TypeError(f"pictures are drawn over dense rows; X is a sparse "
                        f"{type(X).__name__} of shape {X.shape}: pass a sample of its "
                        "rows made dense (X[:5000].toarray()), or draw without rows")
    columns = getattr(X, "columns", None)
    if columns is None:
        return np.asarray(X, dtype=np.float64)
    import pandas as pd

    # a model fitted on named columns reads a table by name, else by position
    named = getattr(model, "feature_names_in_", None)
    names = [] if named is None else [str(n) for n in named]
    by_text = {str(c): c for c in columns}
    table = X[[by_text[n] for n in names]] if names and set(names) <= set(by_text) else X
    categories = getattr(model, "categories_", None) or {}
    out = np.empty(table.shape, dtype=np.float64)
    for j, name in enumerate(table.columns):
        column = table[name]
        if str(name) in categories:
            codes = pd.Categorical(column, categories=list(categories[str(name)])).codes
            out[:, j] = np.where(codes < 0, np.nan, codes)
        else:
            out[:, j] = column.to_numpy(dtype=np.float64, na_value=np.nan)
    return out


def _short(name: str, most: int = 40) -> str:
    """A feature's name as a subplot title: at most ``most`` characters."""
    return name if len(name) <= most else name[:most - 1] + "\u2026"


def _feature_order(model: Any, features: Any, limit: int) -> list[int]:
    names = list(feature_names_of(model))
    if features is not None:
        return [names.index(f) if isinstance(f, str) else int(f) for f in features]
    importance = getattr(model, "feature_importances_", None)
    order = (np.argsort(-np.asarray(importance), kind="stable") if importance is not None
             else np.arange(len(names)))
    return [int(f) for f in order[:limit]]


def shape_functions(model: Any, X: Any = None, features: Any = None,
                    max_features: int = MAX_SHAPES, n_points: int = 100,
                    models: Any = None) -> Any:
    """Each feature's learned curve, with the density of the data under it.

    Parameters
    ----------
    model : AdditiveSVC
        Fitted.
    X : array-like of shape (n, n_features), optional
        Rows whose values are drawn as a histogram under each curve (e.g. a sample of
        the training data).
    features : list of str or int, optional
        Features to draw; default the ``max_features`` most important.
    max_features : int
    n_points : int
        Grid points per curve.
    models : list, optional
        The binary models whose curves to draw, by their labels in the ``model`` column
        of :meth:`~streamlearn.models.AdditiveSVC.shape_functions` (a class, or
        ``"a vs b"`` for one-vs-one). Default: the first :data:`MAX_LINES`; the legend
        says how many were left out (one-vs-one has ``k (k - 1) / 2`` models).

    Returns
    -------
    matplotlib.figure.Figure
    """
    _check_fitted(model, "coef_d_")
    table = model.shape_functions(n_points=n_points)
    every = list(dict.fromkeys(table.model))
    if models is None:
        shown = every[:MAX_LINES]
    else:
        wanted = {str(v) for v in models}
        shown = [m for m in every if str(m) in wanted]
        if not shown:
            raise ValueError(f"models={list(models)!r} names no binary model of this model; "
                             f"its models are {every!r}")
    chosen = _feature_order(model, features, max_features)
    values = _values(X, model)
    names = list(feature_names_of(model))
    transform = getattr(model, "feature_transform_", None)
    if not chosen:
        raise ValueError("no feature to draw: features is empty or max_features is 0")
    fig, axes = _grid(len(chosen))
    for ax, f in zip(axes, chosen, strict=False):
        part = table[table.feature == names[f]]
        # a feature mapped by asinh before its bases: its axis and bins in the same map,
        # where its curve's grid is even and its rows spread
        mapped = (np.flatnonzero(transform.features == f) if transform is not None
                  else np.zeros(0, dtype=np.int64))
        models_of = [m for m in dict.fromkeys(part.model) if m in shown]
        categorical = names[f] in (getattr(model, "categories_", None) or {})
        for m in models_of:
            line = part[part.model == m]
            x = np.arange(len(line)) if categorical else line.value.to_numpy(float)
            y = line.contribution.to_numpy(float)
            y = y - y.mean()
            if categorical:
                ax.plot(x, y, "o-", label=str(m), ms=3)
                ax.set_xticks(x, [str(v) for v in line.value], rotation=60, fontsize=6)
            else:
                ax.plot(x, y, label=str(m))
        if mapped.size and not categorical:
            k = int(mapped[0])
            ax.set_xscale("asinh", linear_width=float(transform.scale[k]))
        if values is not None and not categorical:
            density = ax.twinx()
            bins: Any = 40
            if mapped.size:
                x = part.value.to_numpy(float)
                k = int(mapped[0])
                ends = np.arcsinh((np.array([x.min(), x.max()]) - transform.centre[k])
                                  / transform.scale[k])
                bins = transform.inverse(np.linspace(ends[0], ends[1], 41), f)
            density.hist(values[:, f], bins=bins, color="0.8", zorder=0)
            density.set_yticks([])
            ax.set_zorder(density.get_zorder() + 1)
            ax.patch.set_visible(False)
        ax.set_title(_short(names[f]), fontsize=9)
        ax.axhline(0.0, color="0.6", lw=0.5)
    if len(shown) > 1 or len(shown) < len(every):
        left_out = len(every) - len(shown)
        title = "model" if not left_out else f"model ({left_out} of {len(every)} not drawn)"
        axes[0].legend(fontsize=6, title=title, title_fontsize=6)
    fig.supylabel("contribution to the score (centred)")
    fig.tight_layout()
    return fig


def interaction_surfaces(model: Any, n_points: int = 30) -> Any:
    """Each pair term's surface as a heat map (the binary model where it varies most).

    Parameters
    ----------
    model : AdditiveSVC
        Fitted with ``interactions``.
    n_points : int
        Grid points per axis.

    Returns
    -------
    matplotlib.figure.Figure
    """
    _check_fitted(model, "coef_d_")
    table = model.interaction_surfaces(n_points=n_points)
    if table.empty:
        raise ValueError("the model has no pair terms: fit it with interactions=k")
    pairs = list(dict.fromkeys(table.pair))
    fig, axes = _grid(len(pairs), 3.6, 3.0)
    for ax, pair in zip(axes, pairs, strict=False):
        part = table[table.pair == pair]
        spread = part.groupby("model", sort=False).contribution.agg(np.ptp)
        best = spread.idxmax()
        part = part[part.model == best]
        a = list(dict.fromkeys(part.value_a))
        b = list(dict.fromkeys(part.value_b))
        Z = part.contribution.to_numpy(float).reshape(len(a), len(b))
        limit = float(np.abs(Z - Z.mean()).max()) or 1.0
        # one cell per grid point, labelled by its value: a grid even in a feature's
        # asinh map (spread_tails) or over its categories is drawn as it is
        image = ax.imshow((Z - Z.mean()).T, origin="lower", aspect="auto", cmap="RdBu_r",
                          vmin=-limit, vmax=limit,
                          extent=(-0.5, len(a) - 0.5, -0.5, len(b) - 0.5))
        _grid_ticks(ax.set_xticks, a)
        _grid_ticks(ax.set_yticks, b)
        ax.set_xlabel(str(part.feature_a.iloc[0]), fontsize=8)
        ax.set_ylabel(str(part.feature_b.iloc[0]), fontsize=8)
        title = pair if len(set(table.model)) == 1 else f"{pair} (model {best})"
        ax.set_title(title, fontsize=9)
        fig.colorbar(image, ax=ax, fraction=0.046)
    fig.tight_layout()
    return fig


def _grid_ticks(set_ticks: Any, values: list[Any], most: int = 6) -> None:
    """Ticks at up to ``most`` cells of a grid axis, labelled by their values (numbers to
    three significant digits, categories as they are)."""
    at = np.unique(np.linspace(0, len(values) - 1, min(len(values), most)).round()
                   .astype(int))

    def label(v: Any) -> str:
        return f"{v:.3g}" if isinstance(v, float | np.floating) else str(v)

    set_ticks(at, [label(values[i]) for i in at], fontsize=7)


def importances(model: Any, top: int = MAX_BARS) -> Any:
    """The largest ``feature_importances_`` (and pair terms' importances) as bars.

    Parameters
    ----------
    model : fitted estimator with ``feature_importances_``
    top : int

    Returns
    -------
    matplotlib.figure.Figure
    """
    _check_fitted(model, "feature_importances_")
    given = [str(n) for n in feature_names_of(model)]
    names = list(given)
    values = list(np.asarray(model.feature_importances_, dtype=float))
    pairs = getattr(model, "interactions_", ())
    if len(pairs):
        names += [f"{a} x {b}" for a, b in pairs]
        values += list(np.asarray(model.interaction_importances_, dtype=float))
    order = np.argsort(-np.asarray(values), kind="stable")[:top]
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 0.3 * len(order) + 1.2))
    colours = ["C1" if i >= len(given) else "C0" for i in order]
    ax.barh(range(len(order)), [values[i] for i in order], color=colours)
    ax.set_yticks(range(len(order)), [names[i] for i in order], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("importance")
    ax.set_title(f"{type(model).__name__}: feature importances", fontsize=10)
    fig.tight_layout()
    return fig


def mixture(model: Any, X: Any = None, n_points: int = 200) -> Any:
    """A mixture's component sizes (mixing weights per binary model) and, for data with
    two features, its decision regions with the component centres.

    Parameters
    ----------
    model : MixtureSVC
        Fitted.
    X : array-like of shape (n, 2), optional
        Rows drawn over the regions (two features only); they also set the plotted range.
    n_points : int
        Grid points per axis of the regions.

    Returns
    -------
    matplotlib.figure.Figure
    """
    _check_fitted(model, "xi_", "centers_")
    plt = _pyplot()
    # regions over a grid of two numeric features (a categorical one takes only its codes)
    two_d = model.n_features_in_ == 2 and not (getattr(model, "categories_", None) or {})
    fig, axes = plt.subplots(1, 2 if two_d else 1, figsize=(11 if two_d else 6, 4),
                             squeeze=False)
    ax = axes[0, 0]
    xi = np.asarray(model.xi_)
    order = np.argsort(-xi, axis=1)
    for j in range(xi.shape[0]):
        label = model.classes_[1] if xi.shape[0] == 1 else model.classes_[j]
        ax.plot(np.arange(1, xi.shape[1] + 1), xi[j, order[j]], "o-", ms=3, label=str(label))
    ax.set_xlabel("component (by weight)")
    ax.set_ylabel("mixing weight")
    ax.set_title(f"component sizes; active: {np.count_nonzero(xi)} of {xi.size}", fontsize=10)
    if xi.shape[0] <= MAX_LINES:
        ax.legend(fontsize=7, title="model", title_fontsize=7)
    if two_d:
        values = _values(X, model)
        centres = _data_units(model, np.asarray(model.centers_, dtype=np.float64)
                              .reshape(-1, 2))
        pts = values if values is not None else centres
        lo, hi = pts.min(axis=0), pts.max(axis=0)
        pad = 0.05 * np.where(hi > lo, hi - lo, 1.0)
        g0 = np.linspace(lo[0] - pad[0], hi[0] + pad[0], n_points)
        g1 = np.linspace(lo[1] - pad[1], hi[1] + pad[1], n_points)
        G = np.stack(np.meshgrid(g0, g1), axis=-1).reshape(-1, 2).astype(np.float32)
        with library_rows():  # a grid over the model's two columns
            codes = np.searchsorted(model.classes_, model.predict(G))
        ax = axes[0, 1]
        ax.contourf(g0, g1, codes.reshape(n_points, n_points), alpha=0.3, cmap="tab10",
                    levels=np.arange(len(model.classes_) + 1) - 0.5)
        if values is not None:
            ax.scatter(values[:, 0], values[:, 1], s=2, c="0.3", alpha=0.4)
        active = np.asarray(model.xi_).reshape(-1) > 0
        ax.scatter(centres[active, 0], centres[active, 1], marker="x", c="k", s=25)
        names = feature_names_of(model)
        ax.set_xlabel(str(names[0]))
        ax.set_ylabel(str(names[1]))
        ax.set_title("regions and active centres", fontsize=10)
    fig.tight_layout()
    return fig


def _data_units(model: Any, Z: np.ndarray) -> np.ndarray:
    """Points of a model's standardised space (``z = (x - shift_) / scale_`` of the rows
    as ``feature_transform_`` maps them) in the features' own units."""
    X = Z * np.asarray(model.scale_, dtype=np.float64) + np.asarray(model.shift_,
                                                                     dtype=np.float64)
    transform = getattr(model, "feature_transform_", None)
    if transform is not None:
        X = np.column_stack([transform.inverse(X[:, j], j) for j in range(X.shape[1])])
    return X


def _image_shape(n_features: int, image_shape: Any) -> tuple[int, int] | None:
    if image_shape is not None:
        shape = tuple(int(v) for v in image_shape)
        if len(shape) != 2 or shape[0] * shape[1] != n_features:
            raise ValueError(f"image_shape {image_shape} does not hold {n_features} features")
        return shape[0], shape[1]
    side = math.isqrt(n_features)
    return (side, side) if side * side == n_features and side >= 4 else None


def shareboost(model: Any, image_shape: Any = None) -> Any:
    """ShareBoost's error path against rounds and the features it chose (as an image of the
    chosen pixels when the features form a square image, or ``image_shape``).

    Parameters
    ----------
    model : ShareBoostClassifier
        Fitted.
    image_shape : (int, int), optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    _check_fitted(model, "path_", "selected_features_")
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    ax = axes[0]
    path = model.path_
    rounds = np.arange(len(path["train_error"]))
    for key, label in (("train_error", "training"), ("held_out_error", "held out"),
                       ("validation_error", "validation")):
        values = path.get(key)
        if values is not None and any(v is not None for v in values):
            ax.plot(rounds, [np.nan if v is None else v for v in values], label=label)
    # the kept round: the first whose selection holds the kept columns (a round may add
    # several, so n_iter_, a count of columns, is not a round)
    selected = path.get("n_selected") or []
    kept = next((r for r, n in enumerate(selected) if n >= model.n_iter_), model.n_iter_)
    ax.axvline(kept, color="0.5", ls="--", lw=0.8, label="kept")
    ax.set_xlabel("round (shared columns)")
    ax.set_ylabel("error")
    ax.set_title("error path", fontsize=10)
    ax.legend(fontsize=8)
    ax = axes[1]
    chosen = np.asarray(model.selected_features_, dtype=np.int64)
    names = model._read_feature_names  # the columns read, which chosen counts
    d = len(names)
    features = model.family_.column_features(chosen)  # None: pieces read every feature
    shape = _image_shape(d, image_shape) if features is not None else None
    if shape is not None:
        counts = np.bincount(features, minlength=d)[:d].reshape(shape)
        ax.imshow(counts, cmap="viridis")
        ax.set_title(f"chosen features ({len(chosen)} columns) as an image", fontsize=10)
        ax.set_xticks([])
        ax.set_yticks([])
    else:
        shown = chosen[:MAX_BARS]
        labels = model.family_.column_labels(shown, [str(n) for n in names])
        ax.barh(range(len(shown)), np.arange(len(shown), 0, -1))
        ax.set_yticks(range(len(shown)), labels, fontsize=8)
        ax.invert_yaxis()
        ax.set_xticks([])
        ax.set_title("chosen features, first chosen on top", fontsize=10)
    fig.tight_layout()
    return fig


def prototypes(model: Any, image_shape: Any = None, max_prototypes: int = 24) -> Any:
    """A super-sparse machine's prototypes with their coefficients: as images when the
    features form a square image (or ``image_shape``), else as a heat map.

    Parameters
    ----------
    model : SuperSparseClassifier or SuperSparseRegressor
        Fitted.
    image_shape : (int, int), optional
    max_prototypes : int
        The prototypes with the largest absolute coefficients are drawn.

    Returns
    -------
    matplotlib.figure.Figure
    """
    _check_fitted(model, "prototypes_", "dual_coef_")
    P = np.asarray(model.prototypes_, dtype=float)
    coef = np.asarray(model.dual_coef_, dtype=float)
    coef = coef[:, None] if coef.ndim == 1 else coef.T  # (p, outputs)
    strength = np.abs(coef).max(axis=1)
    classes = getattr(model, "classes_", None)

    def label(i: int) -> str:
        if coef.shape[1] == 1:
            return f"{coef[i, 0]:+.3g}"
        c = int(np.argmax(coef[i]))  # the class this prototype votes for most
        return f"{classes[c] if classes is not None else c}: {coef[i, c]:+.3g}"

    order = np.argsort(-strength, kind="stable")[:max_prototypes]
    shape = _image_shape(P.shape[1], image_shape)
    if shape is not None:
        fig, axes = _grid(len(order), 1.8, 2.0)
        for ax, i in zip(axes, order, strict=False):
            ax.imshow(P[i].reshape(shape), cmap="gray_r")
            ax.set_xticks([])
            ax.set_yticks([])
            ax.set_title(label(i), fontsize=8)
        fig.suptitle("prototypes (coefficient above each; with several classes, its "
                     "largest and its class)", fontsize=10)
        fig.tight_layout()
        return fig
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 0.25 * len(order) + 1.5))
    image = ax.imshow(P[order], aspect="auto", cmap="viridis")
    ax.set_yticks(range(len(order)), [label(i) for i in order], fontsize=7)
    names = model._read_feature_names  # the columns read, as prototypes_ are
    if len(names) <= 40:
        ax.set_xticks(range(len(names)), [str(n) for n in names], rotation=90, fontsize=7)
    ax.set_ylabel("prototype (coefficient)")
    fig.colorbar(image, ax=ax)
    fig.tight_layout()
    return fig


#: The file stems :func:`pictures` draws under, whatever the model.
PICTURE_STEMS = ("importances", "shape_functions", "interaction_surfaces", "mixture",
                 "shareboost", "prototypes")


def pictures(model: Any, X: Any = None) -> dict[str, Any]:
    """Every picture that suits ``model``, by file stem."""
    out: dict[str, Any] = {}
    name = type(model).__name__
    if hasattr(model, "feature_importances_"):
        out["importances"] = importances(model)
    if name == "AdditiveSVC" and (getattr(model, "feature_map_", None) is not None
                                  or hasattr(model, "feature_ranges_")):
        out["shape_functions"] = shape_functions(model, X)
        if len(getattr(model, "interactions_", ())):
            out["interaction_surfaces"] = interaction_surfaces(model)
    if name == "MixtureSVC":
        out["mixture"] = mixture(model, X)
    if name == "ShareBoostClassifier":
        out["shareboost"] = shareboost(model)
    if name.startswith("SuperSparse"):
        out["prototypes"] = prototypes(model)
    return out


def model_summary(model: Any) -> dict[str, Any]:
    """Parameters and the learned scalars of a fitted model, JSON-ready."""
    params = {k: v for k, v in model.get_params().items()
              if k not in ("engine",) and isinstance(v, str | int | float | bool | type(None))}
    learned = {}
    for key, value in vars(model).items():
        if not key.endswith("_") or key.startswith("_"):
            continue
        if isinstance(value, bool | int | float | str):
            learned[key] = value
        elif isinstance(value, tuple) and len(value) <= 40 and all(
                isinstance(v, str | int | float | tuple) for v in value):
            learned[key] = [list(v) if isinstance(v, tuple) else v for v in value]
        elif isinstance(value, np.ndarray):
            learned[key] = f"array {value.shape} {value.dtype}"
    return {"model": type(model).__name__, "parameters": params, "learned": learned}


def explain(model: Any, out_dir: str | Path, X: Any = None) -> Path:
    """Write the model's pictures as PNGs and an ``index.html`` that shows them with its
    summary.

    Parameters
    ----------
    model : fitted streamlearn estimator
    out_dir : str or path
        Created if missing; existing files of the same names are replaced, and the
        pictures of an earlier report there that this model does not draw are removed.
    X : array-like, optional
        A sample of rows for the densities and 2-D regions.

    Returns
    -------
    Path
        The ``index.html``.
    """
    plt = _pyplot()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    figures = pictures(model, X)
    for stem in PICTURE_STEMS:  # an earlier report's pictures, of another model
        if stem not in figures:
            (out / f"{stem}.png").unlink(missing_ok=True)
    for stem, fig in figures.items():
        fig.savefig(out / f"{stem}.png", dpi=100)
        plt.close(fig)
    summary = model_summary(model)
    (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str) + "\n")
    def table(values: dict[str, Any]) -> str:
        return "<table>" + "".join(
            f"<tr><td>{html.escape(k)}</td><td>{html.escape(str(v))}</td></tr>"
            for k, v in values.items()) + "</table>"

    headline = {k: summary["learned"][k] for k in HEADLINE if k in summary["learned"]}
    images = "".join(f'<figure><img src="{stem}.png" alt="{html.escape(stem)}">'
                     f'<figcaption>{html.escape(stem.replace("_", " "))}</figcaption></figure>'
                     for stem in figures)
    page = (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(summary['model'])}</title><style>"
        "body{font-family:sans-serif;margin:1.5em;max-width:1200px}"
        "table{border-collapse:collapse;font-size:13px;margin:0.5em 0}"
        "td{border:1px solid #ccc;padding:2px 8px}img{max-width:100%}"
        "figure{margin:1em 0}figcaption{color:#555;font-size:13px}</style></head><body>"
        f"<h1>{html.escape(summary['model'])}</h1>{table(headline)}{images}"
        "<details><summary>parameters</summary>"
        f"{table(summary['parameters'])}</details>"
        "<details><summary>learned attributes</summary>"
        f"{table(summary['learned'])}</details></body></html>\n")
    index = out / "index.html"
    index.write_text(page)
    return index
