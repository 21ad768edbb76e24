"""The interface every additive feature map shares: fit from statistics, transform, save.

A map embeds each input feature independently into ``n_columns_per_feature`` columns; input
feature ``f`` owns the output columns ``f * n_cols`` to ``(f + 1) * n_cols - 1``. Learned
per-feature statistics are float64 arrays whose names end in ``_``. ``to_dict`` returns only
JSON-safe types and ``FeatureMap.from_dict`` rebuilds any registered map from it.
"""

from __future__ import annotations

from typing import Any, ClassVar, Self

import numpy as np

from streamlearn.errors import SchemaError

FORMAT_VERSION = 1


def as_stat(values: Any, name: str) -> np.ndarray:
    """Return a per-feature statistic as a finite 1-D float64 array.

    Parameters
    ----------
    values : array-like of shape (n_features,)
        The statistic.
    name : str
        Its name, used in error messages.

    Returns
    -------
    ndarray of shape (n_features,), float64
    """
    a = np.array(values, dtype=np.float64, ndmin=1)
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array, got shape {a.shape}")
    bad = np.flatnonzero(~np.isfinite(a))
    if bad.size:
        raise ValueError(f"{name} is not finite for feature {int(bad[0])}: {a[bad[0]]}")
    return a


def nonempty_range(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The upper ends of ranges ``[lo, hi]`` that are never empty: ``hi`` where
    ``hi > lo``, else ``lo`` plus a width of 1, or of ``|lo| * 2**-20`` where that is
    larger, so that the width survives float64 rounding at any magnitude (a constant
    feature of value 1e20 would otherwise get ``hi == lo``, and a map an infinite scale).

    Parameters
    ----------
    lo, hi : ndarray of shape (n_features,), float64
        Each feature's smallest and largest value, ``hi >= lo``.

    Returns
    -------
    ndarray of shape (n_features,), float64
    """
    width = np.maximum(1.0, np.abs(lo) * 2.0**-20)
    return np.where(hi > lo, hi, lo + width)


def dense_to_csr(dense: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CSR triple of the non-zero entries of a dense 2-D array.

    Parameters
    ----------
    dense : ndarray of shape (n_rows, n_cols)

    Returns
    -------
    indptr : ndarray of shape (n_rows + 1,), int64
    indices : ndarray of shape (nnz,), int32
    data : ndarray of shape (nnz,), same dtype as ``dense``
    """
    rows, cols = np.nonzero(dense)
    indptr = np.zeros(dense.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=dense.shape[0]), out=indptr[1:])
    return indptr, cols.astype(np.int32), dense[rows, cols]


class FeatureMap:
    """Base class of additive feature maps.

    Subclasses set ``_param_names`` (constructor arguments) and ``_state_names`` (learned
    per-feature float64 arrays) and implement ``n_columns_per_feature`` and ``transform``.
    """

    _registry: ClassVar[dict[str, type[FeatureMap]]] = {}
    _param_names: ClassVar[tuple[str, ...]] = ()
    _state_names: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        FeatureMap._registry[cls.__name__] = cls

    # -- parameters ---------------------------------------------------------------------
    def get_params(self) -> dict[str, Any]:
        """Constructor arguments as a dict."""
        return {name: getattr(self, name) for name in self._param_names}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"

    @property
    def n_columns_per_feature(self) -> int:
        """Number of output columns each input feature contributes."""
        raise NotImplementedError

    def n_output_features(self, n_features: int) -> int:
        """Number of output columns for ``n_features`` input features."""
        return int(n_features) * self.n_columns_per_feature

    # -- fitted state -------------------------------------------------------------------
    @property
    def is_fitted(self) -> bool:
        """Whether the per-feature statistics have been learned."""
        return all(hasattr(self, name) for name in self._state_names)

    @property
    def n_features_in_(self) -> int:
        """Number of input features seen by ``fit``."""
        self._check_fitted()
        return int(getattr(self, self._state_names[0]).shape[0])

    def _check_fitted(self) -> None:
        if not self.is_fitted:
            raise RuntimeError(f"{type(self).__name__} is not fitted; call fit(...) first")

    def _check_X(self, X: Any) -> np.ndarray:
        self._check_fitted()
        X = np.ascontiguousarray(X, dtype=np.float32)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D (n_rows, n_features), got shape {X.shape}")
        if X.shape[1] != self.n_features_in_:
            raise SchemaError(
                f"X has {X.shape[1]} features but {type(self).__name__} was fitted on "
                f"{self.n_features_in_}"
            )
        return X

    def fit_from_stats(
        self,
        minimum: Any = None,
        maximum: Any = None,
        mean: Any = None,
        std: Any = None,
        quantiles: Any = None,
    ) -> Self:
        """Fit from the per-feature statistics of a streamed describe pass.

        Parameters
        ----------
        minimum, maximum, mean, std : array-like of shape (n_features,), optional
        quantiles : array-like of shape (n_quantiles, n_features), optional
            Each map uses the statistics it needs and says which.

        Returns
        -------
        self
        """
        raise NotImplementedError

    # -- transforms ---------------------------------------------------------------------
    def transform(self, X: Any) -> np.ndarray:
        """Dense embedding, float32 of shape (n_rows, n_output_features(n_features))."""
        raise NotImplementedError

    def sum_sq_norms(self, X: Any) -> float:
        """``sum_i ||Phi(x_i)||^2`` over the rows of ``X``: the dense embedding's squared
        entries, added in float32 (maps whose columns factor may add them without it).

        Parameters
        ----------
        X : array-like of shape (n_rows, n_features)

        Returns
        -------
        float
        """
        Phi = self.transform(X)
        return float(np.vdot(Phi, Phi))

    def transform_csr(self, X: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Embedding as a CSR triple ``(indptr, indices, data)`` of its non-zero entries.

        Parameters
        ----------
        X : array-like of shape (n_rows, n_features)

        Returns
        -------
        indptr : ndarray of shape (n_rows + 1,), int64
        indices : ndarray of int32
        data : ndarray of float32
        """
        return dense_to_csr(self.transform(X))

    # -- serialisation ------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """JSON-safe description: type, format version, parameters and learned state."""
        state = None
        if self.is_fitted:
            state = {name: getattr(self, name).tolist() for name in self._state_names}
        return {
            "type": type(self).__name__,
            "format_version": FORMAT_VERSION,
            "params": self.get_params(),
            "state": state,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        """Rebuild a map from :meth:`to_dict` output.

        Called on ``FeatureMap`` it dispatches on ``data["type"]``; called on a subclass it
        requires that type.
        """
        name = data.get("type")
        target = FeatureMap._registry.get(name) if cls is FeatureMap else cls
        if target is None or (cls is not FeatureMap and name != cls.__name__):
            raise ValueError(f"cannot build {cls.__name__} from a dict of type {name!r}")
        if data.get("format_version") != FORMAT_VERSION:
            raise ValueError(f"unsupported feature map format {data.get('format_version')!r}")
        if cls is FeatureMap:  # the subclass's own from_dict reads what it adds
            return target.from_dict(data)
        obj = target(**data["params"])
        if data.get("state") is not None:
            for key in target._state_names:
                setattr(obj, key, np.asarray(data["state"][key], dtype=np.float64))
        return obj
