"""The fit template every estimator shares: hyper-parameters are checked against the
class's constraint table before any data is read, and a fit that fails leaves no model."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.utils._param_validation import (
    InvalidParameterError,
    generate_invalid_param_val,
    make_constraint,
)
from sklearn.utils.estimator_checks import check_param_validation

from streamlearn.engine import LocalEngine
from streamlearn.models.registry import estimator_classes


class UnreadableData:
    """Training data that fails the test as soon as anything reads it."""

    def __array__(self, *args: Any, **kwargs: Any) -> np.ndarray:
        raise AssertionError("the training data was read before the hyper-parameters "
                             "were checked")


class NotAValue:
    """A value of no type any hyper-parameter accepts."""


def _invalid_values(constraints: list[Any]) -> list[Any]:
    """A value of a wrong type, and per constraint a value of its type that it refuses
    (an out-of-range number, an unknown string) when no other constraint accepts it."""
    made = [make_constraint(c) for c in constraints]
    values: list[Any] = [NotAValue()]
    for constraint in made:
        try:
            value = generate_invalid_param_val(constraint)
        except NotImplementedError:
            continue
        if not any(other.is_satisfied_by(value) for other in made):
            values.append(value)
    return values


def _invalid_cases() -> list[Any]:
    cases = []
    for cls in estimator_classes():
        for name, constraints in cls._parameter_constraints.items():
            if constraints == "no_validation":
                continue
            for value in _invalid_values(constraints):
                # an unknown string lists the options in set order: not in the id, which
                # must be the same in every process (pytest-xdist compares them)
                shown = (type(value).__name__ if isinstance(value, NotAValue | str)
                         else repr(value))
                cases.append(pytest.param(cls, name, value,
                                          id=f"{cls.__name__}-{name}={shown}"))
    return cases


@pytest.mark.parametrize("cls", estimator_classes(), ids=lambda c: c.__name__)
def test_every_constructor_parameter_has_constraints(cls) -> None:
    assert set(cls._parameter_constraints) == set(cls._get_param_names())


@pytest.mark.parametrize("cls, name, value", _invalid_cases())
def test_invalid_parameter_is_refused_before_the_data_is_read(cls, name, value) -> None:
    model = cls(**{name: value})
    with pytest.raises(InvalidParameterError, match=f"'{name}' parameter of {cls.__name__}"):
        model.fit(UnreadableData(), np.zeros(4))
    assert not model.is_fitted


@pytest.mark.parametrize("cls", estimator_classes(), ids=lambda c: c.__name__)
def test_scikit_learn_parameter_validation_check(cls) -> None:
    # scikit-learn's own check (not among those parametrize_with_checks runs): every
    # parameter has constraints, and fit and partial_fit refuse invalid values
    check_param_validation(cls.__name__, cls(progress=False))


# -- a failed fit leaves no model -----------------------------------------------------------
class FailingEngine(LocalEngine):
    """Runs no pass: every run fails, after the training data has been opened."""

    def run(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("engine failed")


def _training_data(task: str) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3)).astype(np.float32)
    score = X[:, 0] - 0.5 * X[:, 1] ** 2
    y = (score > np.median(score)).astype(np.int64) if task == "classification" else score
    return X, y


def _learned(model: Any) -> list[str]:
    return sorted(name for name in vars(model) if name.endswith("_"))


@pytest.mark.parametrize("cls", estimator_classes(), ids=lambda c: c.__name__)
def test_failed_fit_of_a_fitted_model_leaves_it_unfitted(cls) -> None:
    X, y = _training_data(cls._task)
    model = cls(progress=False).fit(X, y)
    assert model.is_fitted and "n_features_in_" in _learned(model)
    params = model.get_params()
    # failing in the algorithm, after the data was opened
    with pytest.raises(RuntimeError, match="engine failed"):
        model.fit(X, y, engine=FailingEngine())
    assert not model.is_fitted and _learned(model) == []
    assert all(name not in vars(model) for name in model._private_state)
    # failing on the data
    model.fit(X, y)
    bad = X.copy()
    bad[5, 1] = np.inf  # NaN would be read as a missing value (nan_policy="auto")
    with pytest.raises(ValueError, match="infinity"):
        model.fit(bad, y)
    assert not model.is_fitted and _learned(model) == []
    # failing on a hyper-parameter
    model.fit(X, y)
    model.set_params(chunk_rows=0)
    with pytest.raises(InvalidParameterError, match="'chunk_rows' parameter"):
        model.fit(X, y)
    assert not model.is_fitted and _learned(model) == []
    # the parameters are never changed by fit, and a good fit after failures works
    model.set_params(chunk_rows=params["chunk_rows"])
    assert model.fit(X, y).get_params() == params
    reference = clone(model).fit(X, y)
    np.testing.assert_allclose(model.predict(X), reference.predict(X))


@pytest.mark.parametrize("cls", estimator_classes(), ids=lambda c: c.__name__)
def test_partial_fit_is_there_or_says_why_not(cls: type) -> None:
    model = cls()
    if hasattr(model, "partial_fit"):
        assert callable(model.partial_fit)
        return
    # absent for scikit-learn and dask-ml (hasattr is False), explained to a user
    with pytest.raises(AttributeError, match=rf"{cls.__name__} has no partial_fit: .+Dataset"):
        model.partial_fit
