"""Model files: JSON metadata plus numpy arrays in one zip archive, never pickle.

Layout of a ``.slm`` file (a zip archive, stored uncompressed for fast loading)::

    metadata.json       format version, model class, hyper-parameters, library version,
                        the SHA-256 of every array, the learned attributes as a JSON tree
                        (:mod:`streamlearn.engine.state_codec`, the codec checkpoints use),
                        and the category lists of categorical features (``categories``)
    arrays/<name>.npy   the arrays of the learned attributes (``allow_pickle=False``); an
                        attribute that is an array is stored under its own name

One codec serves every model: the learned state of a model is its attributes that are not
constructor parameters (names ending in ``_``, and private state such as an online solver's),
so a model needs no code of its own to be saved. Loading reads JSON and ``.npy`` payloads
only: the model class is looked up by name among the registered estimators, and objects
inside the state are rebuilt only from streamlearn classes, by setting attributes, so a file
can never make the loader run code. Writes go to a temporary file beside the destination
(the file a symbolic link names), then ``os.replace``: a crash leaves the previous file
intact. A FIFO or a character device is written through instead
(:mod:`streamlearn.atomic_file`).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import zipfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from streamlearn.atomic_file import atomic_write_bytes
from streamlearn.engine.state_codec import decode, encode
from streamlearn.errors import ModelFileError
from streamlearn.io.file_location import local_path, remote_location, upload_bytes
from streamlearn.version import __version__

FORMAT = "streamlearn-model"
#: 2: learned attributes through the state codec (1: each model's own layout).
FORMAT_VERSION = 2
#: Where :func:`load_model` finds model classes when given none (see
#: :func:`set_default_model_classes`); none until the package root sets it.
_default_classes: Callable[[], Iterable[type]] = tuple


class Persistable(Protocol):
    """What can be saved: a scikit-learn estimator (``get_params``) with learned attributes."""

    def get_params(self, deep: bool = True) -> dict[str, Any]: ...


def _digest(payload: bytes) -> str:
    return hashlib.sha256(payload).hexdigest()


def _npy_bytes(array: np.ndarray) -> bytes:
    if array.dtype.hasobject:
        raise ModelFileError(f"array of dtype {array.dtype} cannot be saved without pickle; "
                             "store strings as a fixed-width unicode array")
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, np.ascontiguousarray(array), allow_pickle=False)
    return buffer.getvalue()


def save_model(model: Persistable, path: str | os.PathLike[str]) -> Path | str:
    """Save ``model`` to ``path`` atomically.

    Parameters
    ----------
    model
        A fitted estimator: its hyper-parameters (``get_params``) and learned attributes
        (see :func:`learned_state`) are written.
    path : str or path-like
        Destination file (conventionally ``*.slm``): a local path, or an fsspec URL
        (``s3://bucket/model.slm``), written in one upload once complete.

    Returns
    -------
    Path or str
        The local path written, or the URL.
    """
    params = model.get_params(deep=False)
    learned = learned_state(model, params)
    arrays: dict[str, np.ndarray] = {}
    tree: dict[str, Any] = {}
    for name, value in learned.items():  # top-level arrays keep their attribute's name
        if isinstance(value, np.ndarray):
            arrays[name] = value
            tree[name] = {"$array": name}
    for name, value in learned.items():
        if not isinstance(value, np.ndarray):
            tree[name] = encode(value, arrays, error=ModelFileError)
    runtime = getattr(model, "_runtime_params", ("engine",))
    metadata = {"params": {k: None if k in runtime else _stored_param(model, k, v, arrays)
                           for k, v in params.items()},
                "learned": tree}
    payloads = {name: _npy_bytes(np.asarray(a)) for name, a in arrays.items()}
    header = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "class": type(model).__name__,
        "streamlearn_version": __version__,
        "metadata": metadata,
        "arrays": {name: _digest(b) for name, b in payloads.items()},
    }
    categories = getattr(model, "categories_", None)
    if categories:
        header["categories"] = {str(k): _json_values(v, k) for k, v in categories.items()}
    try:
        text = json.dumps(header, indent=1, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ModelFileError(f"model metadata is not JSON-safe: {exc}") from exc

    def write(fh: Any) -> None:
        with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_STORED) as zf:
            zf.writestr("metadata.json", text)
            for name, payload in payloads.items():
                zf.writestr(f"arrays/{name}.npy", payload)

    if remote_location(path) is None:
        return atomic_write_bytes(local_path(path), write)
    buffer = io.BytesIO()
    write(buffer)
    try:
        upload_bytes(buffer.getvalue(), path)
    except OSError as exc:
        raise ModelFileError(f"could not write the model to {os.fspath(path)}: {exc}") from exc
    return os.fspath(path)


def read_model_file(
    path: str | os.PathLike[str],
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Read and verify a model file (a local path or an fsspec URL); return its header and
    arrays without building a model."""
    remote = remote_location(path)
    contents: Path | io.BytesIO
    if remote is None:
        contents = local_path(path)
        if not contents.exists():
            raise ModelFileError(f"no model file at {path}")
    else:
        fs, inner = remote
        try:
            contents = io.BytesIO(fs.cat_file(inner))
        except FileNotFoundError:
            raise ModelFileError(f"no model file at {path}") from None
        except OSError as exc:
            raise ModelFileError(f"could not read the model file {path}: {exc}") from exc
    try:
        with zipfile.ZipFile(contents) as zf:
            names = set(zf.namelist())
            if "metadata.json" not in names:
                raise ModelFileError(f"{path} is not a streamlearn model file (no metadata.json)")
            header = json.loads(zf.read("metadata.json"))
            if not isinstance(header, dict) or header.get("format") != FORMAT:
                raise ModelFileError(f"{path} is not a streamlearn model file")
            version = header.get("format_version")
            if version != FORMAT_VERSION:
                raise ModelFileError(
                    f"{path} has model format version {version}; this streamlearn "
                    f"({__version__}) reads version {FORMAT_VERSION}. It was written by "
                    f"streamlearn {header.get('streamlearn_version', '?')}"
                )
            listed = header.get("arrays", {})
            if not isinstance(listed, dict) or not all(
                    isinstance(name, str) and isinstance(digest, str)
                    for name, digest in listed.items()):
                raise ModelFileError(f"{path} has damaged metadata: its list of arrays is "
                                     f"not a mapping of names to checksums")
            arrays: dict[str, np.ndarray] = {}
            for name, digest in listed.items():
                member = f"arrays/{name}.npy"
                if member not in names:
                    raise ModelFileError(f"{path} is truncated: array {name!r} is missing")
                payload = zf.read(member)
                if _digest(payload) != digest:
                    raise ModelFileError(
                        f"{path} has been modified: array {name!r} does not match its checksum"
                    )
                arrays[name] = np.lib.format.read_array(io.BytesIO(payload), allow_pickle=False)
    except zipfile.BadZipFile as exc:
        raise ModelFileError(
            f"{path} is truncated or not a streamlearn model file ({exc})"
        ) from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ModelFileError(f"{path} has unreadable metadata ({exc})") from exc
    except (ValueError, EOFError, OSError) as exc:
        if isinstance(exc, ModelFileError):
            raise
        raise ModelFileError(f"{path} is damaged: {exc}") from exc
    return header, arrays


def load_model(path: str | os.PathLike[str], *, expected: type | None = None,
               classes: dict[str, type] | None = None) -> Any:
    """Load a model saved by :func:`save_model`.

    Parameters
    ----------
    path : str or path-like
    expected : type, optional
        Raise unless the file holds a model of this class.
    classes : dict, optional
        Name -> class of the models that may be loaded; defaults to streamlearn's estimators.
    """
    header, arrays = read_model_file(path)
    registry = classes if classes is not None else _estimators()
    name = header.get("class")
    cls = registry.get(name) if isinstance(name, str) else None
    if cls is None:
        raise ModelFileError(f"{path} holds a {name!r}, which is not a streamlearn model")
    if expected is not None and cls is not expected:
        raise ModelFileError(f"{path} holds a model of class {name}, not {expected.__name__}: "
                             f"load it with {name}.load or streamlearn.io.load_model")
    metadata = header.get("metadata", {})
    try:
        # a parameter the file predates takes the value its model was trained with
        model = cls(**{**getattr(cls, "_params_before", {}),
                       **{k: decode(v, arrays, error=ModelFileError)
                          for k, v in metadata.get("params", {}).items()}})
        learned = {name: decode(value, arrays, error=ModelFileError)
                   for name, value in metadata["learned"].items()}
    except (TypeError, KeyError, AttributeError) as exc:
        raise ModelFileError(f"{path} has unreadable model metadata ({exc})") from exc
    validate = getattr(model, "_validate_params", None)  # scikit-learn's constraints
    if validate is not None and hasattr(model, "_parameter_constraints"):
        try:
            validate()
        except ValueError as exc:  # InvalidParameterError
            raise ModelFileError(f"{path} holds a parameter that {name} does not take "
                                 f"({exc})") from exc
    renamed = getattr(cls, "_renamed_attributes", {})
    for name, value in learned.items():  # a file written before a rename: the name now
        setattr(model, renamed.get(name, name), value)
    categories = header.get("categories")
    if categories:
        if not isinstance(categories, dict) or not all(
                isinstance(v, list) for v in categories.values()):
            raise ModelFileError(f"{path} has unreadable category lists")
        set_categories = getattr(model, "_set_categories", None)
        if set_categories is not None:
            set_categories(categories)
    return model


def learned_state(model: Any, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """What a fitted model learned: its attributes other than the constructor parameters.

    Tuple subclasses that carry extra attributes (feature names with their categories)
    are stored as plain tuples; the categories travel in the file's ``categories``.

    Parameters
    ----------
    model : estimator
    params : dict, optional
        Its ``get_params(deep=False)``.

    Returns
    -------
    dict
        Attribute name -> value.
    """
    params = model.get_params(deep=False) if params is None else params
    state = {}
    for name, value in vars(model).items():
        if name in params or name.startswith("__"):
            continue
        if isinstance(value, tuple) and type(value) is not tuple and \
                not hasattr(value, "_fields"):
            value = tuple(value)
        state[name] = value
    return state


def _stored_param(model: Any, name: str, value: Any, arrays: dict[str, np.ndarray]) -> Any:
    """A hyper-parameter as the codec stores it; one it cannot store (a Python callable)
    makes the model unsavable, since loading it without that value would change it."""
    if callable(value):
        raise ModelFileError(f"{type(model).__name__} has {name}={value!r}, a Python "
                             "callable: a model file holds no code, so this model cannot "
                             "be saved; use one of the named options instead")
    return encode(value, arrays, error=ModelFileError)


def _json_values(values: Any, name: Any) -> list[Any]:
    """Category values as JSON scalars (str, int, float, bool)."""
    out = []
    for v in values:
        v = v.item() if isinstance(v, np.generic) else v
        if not isinstance(v, str | int | float | bool):
            raise ModelFileError(f"category {v!r} of feature {name!r} is a "
                                 f"{type(v).__name__}; model files hold categories that are "
                                 "strings, numbers or booleans")
        out.append(v)
    return out


def set_default_model_classes(classes: Callable[[], Iterable[type]]) -> None:
    """Say where :func:`load_model` finds model classes when its caller names none.

    The package root passes the models registry's ``estimator_classes``: model files sit
    in a layer above the models and do not import them.

    Parameters
    ----------
    classes : callable
        Returns the model classes, called at each load (so that it may import lazily).
    """
    global _default_classes
    _default_classes = classes


def _estimators() -> dict[str, type]:
    return {cls.__name__: cls for cls in _default_classes()}
