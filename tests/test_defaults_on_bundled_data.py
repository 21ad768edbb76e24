"""Every registered model's defaults on scikit-learn's bundled datasets, as a new user fits
them: they converge (no ``ConvergenceWarning``) and predict about as well as a linear
model fitted by scikit-learn on the same split.

The datasets ship with scikit-learn (no download): breast cancer (569 rows x 30 features,
two classes, features in units from 1e-3 to 1e3) and wine (178 x 13, three classes) for
the classifiers, diabetes (442 x 10) for the regressors. A registered model is covered
without touching this file.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.base import is_classifier
from sklearn.datasets import load_breast_cancer, load_diabetes, load_wine
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression, RidgeCV
from sklearn.metrics import r2_score
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from streamlearn.models.registry import estimator_classes

CLASSIFIERS = [c for c in estimator_classes() if is_classifier(c())]
REGRESSORS = [c for c in estimator_classes() if not is_classifier(c())]
#: Test accuracy at most this far below the scaled logistic regression's. On breast cancer
#: every default was within 0.006 of it (0.953-0.959 against 0.959), on wine all at 1.0.
ACCURACY_SLACK = 0.03
#: Test R^2 at most this far below ridge regression's (0.39 on this split; the two
#: regressors' defaults 0.37 and 0.33: the target is mostly linear and noisy).
R2_SLACK = 0.1


def split(loader):
    X, y = loader(return_X_y=True)
    return train_test_split(X, y, test_size=0.3, random_state=0,
                            stratify=y if loader is not load_diabetes else None)


def fit_without_warning(model, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        return model.fit(X, y)


@pytest.mark.parametrize("loader", [load_breast_cancer, load_wine],
                         ids=["breast_cancer", "wine"])
@pytest.mark.parametrize("estimator", CLASSIFIERS, ids=lambda c: c.__name__)
def test_classifier_defaults_converge_and_match_a_linear_model(estimator, loader):
    Xtr, Xte, ytr, yte = split(loader)
    try:
        model = fit_without_warning(estimator(), Xtr, ytr)
    except ValueError as exc:  # a two-class model refuses three classes, saying so
        assert len(np.unique(ytr)) > 2 and "two-class classifier" in str(exc), exc
        return
    linear = make_pipeline(StandardScaler(), LogisticRegression(max_iter=5000)).fit(Xtr, ytr)
    assert model.score(Xte, yte) >= linear.score(Xte, yte) - ACCURACY_SLACK


@pytest.mark.parametrize("estimator", REGRESSORS, ids=lambda c: c.__name__)
def test_regressor_defaults_converge_and_match_a_linear_model(estimator):
    Xtr, Xte, ytr, yte = split(load_diabetes)
    model = fit_without_warning(estimator(), Xtr, ytr)
    linear = make_pipeline(StandardScaler(), RidgeCV()).fit(Xtr, ytr)
    assert (r2_score(yte, model.predict(Xte))
            >= r2_score(yte, linear.predict(Xte)) - R2_SLACK)
