"""Nested state (an optimizer's or a scheduler's ``state_dict()``) as JSON plus named tensors.

`flatten` turns a tree of dicts, lists, tuples, numbers, strings, None and Tensors into JSON,
moving each Tensor into a dict of named tensors (stored as safetensors data) and leaving
``{"__tensor__": name}`` in its place. What plain JSON cannot say is spelled with one-key
objects, so that `unflatten` gives back exactly what was flattened:

- ``{"__tuple__": [...]}`` a tuple (Adam's ``betas``),
- ``{"__dict__": [[key, value], ...]}`` a dict with keys that are not all strings
  (PyTorch keys optimizer state by parameter index), or that use one of these markers,
- ``{"__float__": "inf"}`` an infinite or NaN float (strict JSON has none).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import Any

from .._tensor import Tensor
from ..errors import ArgumentError, FormatError
from .header import brief

TENSOR, TUPLE, DICT, FLOAT = "__tensor__", "__tuple__", "__dict__", "__float__"
_MARKERS = frozenset((TENSOR, TUPLE, DICT, FLOAT))
_SPECIAL_FLOATS = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


def flatten(value: Any, prefix: str, tensors: dict[str, Tensor]) -> Any:
    """The JSON form of `value`; its tensors are added to `tensors` under names that start
    with `prefix` and follow their place in the tree (``optim.state.0.exp_avg``)."""

    def walk(v: Any, path: str) -> Any:
        if isinstance(v, Tensor):
            name, n = path, 1
            while name in tensors:  # keys with dots in them can make two paths alike
                name, n = f"{path}~{n}", n + 1
            tensors[name] = v
            return {TENSOR: name}
        if v is None or isinstance(v, (bool, str)):
            return v
        if isinstance(v, numbers.Integral):
            return int(v)
        if isinstance(v, numbers.Real):
            v = float(v)
            return v if math.isfinite(v) else {FLOAT: repr(v)}
        if isinstance(v, tuple):
            return {TUPLE: [walk(x, f"{path}.{i}") for i, x in enumerate(v)]}
        if isinstance(v, list):
            return [walk(x, f"{path}.{i}") for i, x in enumerate(v)]
        if isinstance(v, Mapping):
            if all(isinstance(k, str) for k in v) and not _MARKERS.intersection(v):
                return {k: walk(x, f"{path}.{k}") for k, x in v.items()}
            return {DICT: [[walk(k, f"{path}.{k}"), walk(x, f"{path}.{k}")]
                           for k, x in v.items()]}
        raise ArgumentError(f"{path} is a {type(v).__name__}; a checkpoint stores tensors, "
                            f"numbers, strings, None, and lists, tuples and dicts of them")

    return walk(value, prefix)


def unflatten(value: Any, tensors: Mapping[str, Tensor]) -> Any:
    """The tree that `flatten` turned into `value`, with its tensors taken from `tensors`;
    FormatError where `value` is not something `flatten` writes."""
    if isinstance(value, list):
        return [unflatten(x, tensors) for x in value]
    if not isinstance(value, dict):
        return value
    if len(value) != 1 or next(iter(value)) not in _MARKERS:
        return {k: unflatten(x, tensors) for k, x in value.items()}
    ((marker, body),) = value.items()
    if marker == TENSOR:
        if not isinstance(body, str) or body not in tensors:
            raise FormatError(f"the checkpoint refers to a tensor {brief(body)} that its "
                              f"file lacks")
        return tensors[body]
    if marker == FLOAT:
        if not isinstance(body, str) or body not in _SPECIAL_FLOATS:
            raise FormatError(f"{FLOAT} holds {brief(body)}, not one of "
                              f"{', '.join(_SPECIAL_FLOATS)}")
        return _SPECIAL_FLOATS[body]
    if not isinstance(body, list):
        raise FormatError(f"{marker} holds {type(body).__name__}, not a list")
    if marker == TUPLE:
        return tuple(unflatten(x, tensors) for x in body)
    if not all(isinstance(pair, list) and len(pair) == 2 for pair in body):
        raise FormatError(f"{DICT} holds something other than [key, value] pairs")
    try:
        return {unflatten(k, tensors): unflatten(x, tensors) for k, x in body}
    except TypeError:  # a key that cannot be one (a list): only a corrupt file has it
        raise FormatError(f"{DICT} has a key that cannot be a dict key") from None
