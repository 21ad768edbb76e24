"""Read-only arrays (frozen, memory-mapped, zero-copy reads) reach the same compiled kernels
as writeable ones: numba types them apart, and a second signature is a second compile of
seconds on a user's first predict or fit."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from numba.core.registry import CPUDispatcher

from streamlearn.io import load_model, save_model
from streamlearn.models.registry import MODELS, import_estimator

#: A small configuration of every registered estimator, and whether it trains on sparse rows.
SMALL: dict[str, tuple[dict[str, Any], bool]] = {
    "AdditiveSVC": ({"epochs": 2}, True),
    "MixtureSVC": ({"n_components": 2, "epochs": 1}, True),
    "ShareBoostClassifier": ({"n_rounds": 2}, True),
    "SparsePPRRegressor": ({"n_terms": 2, "backfit": False}, False),
    "SparseJSBoostClassifier": ({"n_rounds": 2}, False),
    "SuperSparseClassifier": ({"n_prototypes": 4}, False),
    "SuperSparseRegressor": ({"n_prototypes": 4}, False),
}

PATHS = [path for entry in MODELS.values() for path in entry.paths]


def _signatures() -> dict[str, set[tuple[Any, ...]]]:
    """Compiled signatures of every numba dispatcher of the streamlearn modules loaded."""
    out: dict[str, set[tuple[Any, ...]]] = {}
    for name, module in list(sys.modules.items()):
        if name.startswith("streamlearn.") and module is not None:
            for attr, value in vars(module).items():
                if isinstance(value, CPUDispatcher):
                    out[f"{name}.{attr}"] = set(value.signatures)
    return out


def _writeable_twin(signature: tuple[Any, ...]) -> str:
    return ", ".join(str(t).replace("readonly ", "") for t in signature)


def _data(path: str, n: int = 120) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 4)).astype(np.float32)
    score = X[:, 0] + 0.5 * X[:, 1]
    regression = path.endswith("Regressor")
    if regression:
        return X, score
    two_class = "JSBoost" in path
    return X, (score > 0).astype(int) if two_class else np.digitize(score, [-0.5, 0.5])


def test_every_model_is_checked() -> None:
    assert sorted(p.split(":")[1] for p in PATHS) == sorted(SMALL)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # short fits
@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.split(":")[1])
def test_read_only_rows_and_loaded_models_reuse_the_compiled_kernels(
    path: str, tmp_path: Path
) -> None:
    cls = import_estimator(path)
    params, takes_sparse = SMALL[cls.__name__]
    X, y = _data(path)
    model = cls(**params).fit(X, y)
    model.predict(X)
    if takes_sparse:
        cls(**params).fit(sp.csr_matrix(X), y).predict(sp.csr_matrix(X))
    before = _signatures()

    frozen, frozen_y = X.copy(), y.copy()
    frozen.setflags(write=False)
    frozen_y.setflags(write=False)
    model.predict(frozen)
    refit = cls(**params).fit(frozen, frozen_y)
    np.testing.assert_array_equal(refit.predict(X), model.predict(X))
    loaded = load_model(save_model(model, tmp_path / "m.slm"))
    np.testing.assert_array_equal(loaded.predict(frozen), model.predict(X))
    if takes_sparse:
        rows = sp.csr_matrix(X)
        for a in (rows.data, rows.indices, rows.indptr):
            a.setflags(write=False)
        cls(**params).fit(rows, frozen_y).predict(rows)

    after = _signatures()
    twins = [
        f"{name}({_writeable_twin(sig)})"
        for name, sigs in after.items()
        for sig in sigs - before.get(name, set())
        if any(_writeable_twin(sig) == _writeable_twin(other) for other in sigs if other != sig)
    ]
    assert not twins, f"compiled again for read-only arrays: {twins}"
