"""Nested values as a JSON tree plus numpy arrays: how checkpoints and model files store state.

:func:`encode` turns pass states, pass results and fitted models' learned attributes (None,
numbers, strings, numpy arrays and scalars, lists, tuples, dicts, named tuples, dataclasses
and other objects of streamlearn classes) into a tree of JSON values whose arrays are set
aside, to be written as ``.npy`` files. :func:`decode` rebuilds the values. Objects are
rebuilt only from classes defined in streamlearn, by setting their attributes: decoding
never runs code named by the stored data, and arrays of Python objects are refused.
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any

import numpy as np

from streamlearn.errors import StreamlearnError


class StateCodecError(StreamlearnError, ValueError):
    """A value cannot be stored, or a stored tree cannot be read back."""


def _class_name(obj: Any, error: type[Exception]) -> str:
    cls = type(obj)
    module = cls.__module__
    if module != "streamlearn" and not module.startswith("streamlearn."):
        raise error(f"cannot store a {module}.{cls.__qualname__}: states and learned "
                    "attributes must be built from numpy arrays, scalars, lists, tuples, "
                    "dicts and streamlearn classes")
    return f"{module}:{cls.__qualname__}"


def _find_class(name: str, error: type[Exception]) -> type:
    module, _, qualname = str(name).partition(":")
    if module != "streamlearn" and not module.startswith("streamlearn."):
        raise error(f"the stored state names the class {name!r}, outside streamlearn")
    try:
        found: Any = importlib.import_module(module)
        for part in qualname.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError) as exc:
        raise error(f"the stored state names the class {name!r}, which this version of "
                    "streamlearn does not have") from exc
    if not isinstance(found, type):
        raise error(f"the stored state names {name!r}, which is not a class")
    return found


def _attributes(obj: Any, error: type[Exception]) -> dict[str, Any]:
    if dataclasses.is_dataclass(obj):
        return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    attrs = dict(getattr(obj, "__dict__", {}))
    for cls in type(obj).__mro__:
        for slot in getattr(cls, "__slots__", ()):
            if slot not in attrs and hasattr(obj, slot):
                attrs[slot] = getattr(obj, slot)
    if not attrs and not hasattr(obj, "__dict__"):
        raise error(f"cannot store a {type(obj).__name__}: it has no attributes")
    return attrs


def encode(value: Any, arrays: dict[str, np.ndarray], *,
           error: type[Exception] = StateCodecError) -> Any:
    """JSON-safe tree of ``value``; its arrays are added to ``arrays`` (under fresh names).

    Parameters
    ----------
    value
        None, bool, int, float, str, numpy arrays and scalars, and lists, tuples, dicts,
        named tuples, dataclasses and objects (of streamlearn classes) of those.
    arrays : dict
        Receives the arrays (copied), to be written as ``.npy`` files.
    error : exception class
        Raised, with a message naming the problem, for a value that cannot be stored.

    Returns
    -------
    A tree of JSON values: plain lists, and objects tagged ``"$..."``.
    """
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int) and type(value) is int:
        return value
    if isinstance(value, float) and type(value) is float:
        return value if np.isfinite(value) else {"$float": repr(value)}
    if isinstance(value, np.ndarray | np.generic):
        array = np.asarray(value)
        if array.dtype.hasobject:
            raise error("cannot store an array of Python objects")
        name = f"a{len(arrays)}"
        while name in arrays:
            name += "_"
        arrays[name] = array.copy()
        return {"$array" if isinstance(value, np.ndarray) else "$scalar": name}
    if isinstance(value, list):
        return [encode(v, arrays, error=error) for v in value]
    if isinstance(value, dict):
        return {"$dict": [[encode(k, arrays, error=error), encode(v, arrays, error=error)]
                          for k, v in value.items()]}
    if isinstance(value, tuple):
        items = [encode(v, arrays, error=error) for v in value]
        if type(value) is tuple:
            return {"$tuple": items}
        return {"$object": _class_name(value, error), "tuple": items}
    name = _class_name(value, error)
    return {"$object": name, "attrs": {k: encode(v, arrays, error=error)
                                       for k, v in _attributes(value, error).items()}}


def decode(tree: Any, arrays: dict[str, np.ndarray], *,
           error: type[Exception] = StateCodecError) -> Any:
    """Rebuild the value :func:`encode` turned into ``tree``.

    Parameters
    ----------
    tree
        What :func:`encode` returned.
    arrays : dict
        The arrays it set aside, by name.
    error : exception class
        Raised, with a message naming the problem, for a damaged or unknown tree.
    """
    if isinstance(tree, list):
        return [decode(v, arrays, error=error) for v in tree]
    if not isinstance(tree, dict):
        return tree
    try:
        if "$float" in tree:
            return float(tree["$float"])
        if "$array" in tree:
            return arrays[tree["$array"]]
        if "$scalar" in tree:
            return arrays[tree["$scalar"]][()]
        if "$tuple" in tree:
            return tuple(decode(v, arrays, error=error) for v in tree["$tuple"])
        if "$dict" in tree:
            return {_hashable(decode(k, arrays, error=error)): decode(v, arrays, error=error)
                    for k, v in tree["$dict"]}
        if "$object" in tree:
            cls = _find_class(tree["$object"], error)
            if "tuple" in tree:
                return tuple.__new__(cls, [decode(v, arrays, error=error)
                                           for v in tree["tuple"]])
            obj = cls.__new__(cls)
            for key, value in tree["attrs"].items():
                object.__setattr__(obj, key, decode(value, arrays, error=error))
            return obj
    except KeyError as exc:
        raise error(f"the stored state is damaged: missing entry {exc}") from exc
    raise error(f"the stored state holds an unknown entry {sorted(tree)}")


def _hashable(key: Any) -> Any:
    return key.item() if isinstance(key, np.generic) else key
