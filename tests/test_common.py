"""Every registered estimator passes scikit-learn's own estimator checks.

The checks an algorithm cannot pass are declared by the estimator itself
(``_expected_failed_checks``, check name -> reason) and listed in the README.
"""

from __future__ import annotations

from sklearn.utils.estimator_checks import parametrize_with_checks

from streamlearn.models.registry import MODELS, estimator_classes


def _expected_failures(estimator: object) -> dict[str, str]:
    return dict(getattr(estimator, "_expected_failed_checks", {}))


@parametrize_with_checks([cls() for cls in estimator_classes()],
                         expected_failed_checks=_expected_failures)
def test_scikit_learn_estimator_checks(estimator: object, check: object) -> None:
    check(estimator)  # type: ignore[operator]


def test_registry_lists_every_exported_estimator() -> None:
    import streamlearn.models as models

    registered = {cls.__name__ for cls in estimator_classes()}
    assert registered == set(models.__all__) - set(models.META_ESTIMATORS)
    assert set(models.META_ESTIMATORS) <= set(models.__all__)
    for name in models.META_ESTIMATORS:  # importable, and not a model of the registry
        assert getattr(models, name).__name__ == name
    assert len(registered) == sum(len(entry.paths) for entry in MODELS.values())


def test_expected_failures_give_a_reason() -> None:
    for cls in estimator_classes():
        for check, reason in cls._expected_failed_checks.items():
            assert check.startswith("check_") and reason.strip(), (cls.__name__, check)


def test_estimators_import_from_the_package_root_on_first_use() -> None:
    import subprocess
    import sys

    import streamlearn
    import streamlearn.models as models

    for name in models.__all__:
        assert getattr(streamlearn, name) is getattr(models, name)
        assert name in dir(streamlearn) and name in streamlearn.__all__
    # a fresh interpreter: importing the package loads no model code until a name is used
    code = ("import sys, streamlearn\n"
            "assert 'streamlearn.models.additive' not in sys.modules\n"
            "streamlearn.AdditiveSVC\n"
            "assert 'streamlearn.models.additive' in sys.modules\n"
            "try:\n    streamlearn.NoSuchModel\nexcept AttributeError as e:\n"
            "    assert 'NoSuchModel' in str(e)\nelse:\n    raise SystemExit(1)\n")
    subprocess.run([sys.executable, "-c", code], check=True)
