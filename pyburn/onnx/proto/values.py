"""SequenceProto, OptionalProto and MapProto (onnx-data.proto: how the node test suite stores
inputs and outputs that are not tensors) as Python values: a sequence is a list, an optional
its value or None, a map a dict; the tensors inside are `ir.TensorData`."""

from __future__ import annotations

from typing import Any

from ...errors import FormatError
from .tensor_proto import Origin, read_sparse, read_tensor

#: SequenceProto/OptionalProto.DataType: the field holding elements of each type, for a
#: sequence (repeated) and an optional (single)
_ELEMENT_FIELDS = {1: ("tensor_values", "tensor_value"),
                   2: ("sparse_tensor_values", "sparse_tensor_value"),
                   3: ("sequence_values", "sequence_value"), 4: ("map_values", "map_value"),
                   5: ("optional_values", "optional_value")}
_MESSAGE_OF_KIND = {"tensor": "TensorProto", "sparse_tensor": "SparseTensorProto",
                     "sequence": "SequenceProto", "map": "MapProto",
                     "optional": "OptionalProto"}
_STRING = 8  # TensorProto.DataType.STRING: a map with string keys


def message_of(kind: str) -> str:
    """The message a value of `kind` ("tensor", "sequence", "optional", "map",
    "sparse_tensor") is stored as."""
    message = _MESSAGE_OF_KIND.get(kind)
    if message is None:
        raise FormatError(f"no ONNX value file holds a {kind!r}; the kinds are "
                          f"{', '.join(_MESSAGE_OF_KIND)}")
    return message


def read_value(message: str, d: dict[str, Any], origin: Origin) -> Any:
    """The value of the decoded `message` `d` (see the module docstring)."""
    if message == "TensorProto":
        return read_tensor(d, origin)
    if message == "SparseTensorProto":
        return read_sparse(d, origin)
    if message == "SequenceProto":
        return _sequence(d, origin)
    if message == "OptionalProto":
        return _optional(d, origin)
    return _map(d, origin)


def _element_type(d: dict[str, Any], plural: bool, what: str) -> int:
    """The element type a sequence or optional declares; when it declares none, the type of
    the elements it holds (0 when it holds none)."""
    code = d.get("elem_type", 0)
    if code == 0:
        return next((c for c, fields in _ELEMENT_FIELDS.items() if fields[not plural] in d), 0)
    if code not in _ELEMENT_FIELDS:
        raise FormatError(f"{what} has element type {code}, which ONNX does not define")
    return code


def _read_element(code: int, d: dict[str, Any], origin: Origin) -> Any:
    kind = ("tensor", "sparse_tensor", "sequence", "map", "optional")[code - 1]
    return read_value(_MESSAGE_OF_KIND[kind], d, origin)


def _sequence(d: dict[str, Any], origin: Origin) -> list[Any]:
    code = _element_type(d, True, f"sequence {d.get('name', '')!r}")
    if code == 0:
        return []
    return [_read_element(code, e, origin) for e in d.get(_ELEMENT_FIELDS[code][0], ())]


def _optional(d: dict[str, Any], origin: Origin) -> Any:
    code = _element_type(d, False, f"optional {d.get('name', '')!r}")
    value = d.get(_ELEMENT_FIELDS[code][1]) if code else None
    return None if value is None else _read_element(code, value, origin)


def _map(d: dict[str, Any], origin: Origin) -> dict[Any, Any]:
    name = d.get("name", "")
    if d.get("key_type", 0) == _STRING:
        keys: list[Any] = [str(k, "utf-8", "surrogateescape") for k in d.get("string_keys", ())]
    else:
        keys = list(d.get("keys", ()))
    values = _sequence(d.get("values", {}), origin)
    if len(keys) != len(values):
        raise FormatError(f"map {name!r} has {len(keys)} keys but {len(values)} values")
    return dict(zip(keys, values))
