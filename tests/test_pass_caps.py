"""Caps on a solver's passes raised on small data (``streamlearn.solvers.pass_caps``).

References: the closed form ``min(most, max(least, ceil(1e6 / n)))`` computed with numpy,
and the fits on scikit-learn's digits that met their rules only under the raised cap.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split

from streamlearn.models import SuperSparseClassifier
from streamlearn.solvers.pass_caps import ROW_PASSES, pass_cap
from streamlearn.solvers.supersparse import driver


@pytest.mark.parametrize("n_rows", [0, 1, 999, 1257, 5_000, 20_000, 33_334, 10**9])
def test_pass_cap_is_the_closed_form(n_rows: int) -> None:
    for least, most in [(50, 200), (30, 100), (5, 5)]:
        expected = min(most, max(least, int(np.ceil(ROW_PASSES / max(n_rows, 1)))))
        assert pass_cap(n_rows, least, most) == expected
    assert driver.refit_pass_cap(n_rows) == pass_cap(n_rows, driver.REFIT_MAX_ITER,
                                                       driver.REFIT_MAX_ITER_SMALL)


def test_super_sparse_refit_on_small_data_meets_its_rule_under_the_raised_cap(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # 70 % of digits, a split where one lane of the held-out refit needed 33 passes
    X, y = load_digits(return_X_y=True)
    X_train, _, y_train, _ = train_test_split(X, y, test_size=0.3, random_state=2, stratify=y)
    assert driver.refit_pass_cap(len(y_train)) == driver.REFIT_MAX_ITER_SMALL
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        SuperSparseClassifier(progress=False).fit(X_train, y_train)
    monkeypatch.setattr(driver, "REFIT_MAX_ITER_SMALL", driver.REFIT_MAX_ITER)
    with pytest.warns(ConvergenceWarning, match="refit stopped after 30 Newton passes"):
        SuperSparseClassifier(progress=False).fit(X_train, y_train)
