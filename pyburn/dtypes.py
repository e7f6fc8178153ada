"""Data types and the one promotion table every backend obeys.

Promotion (documented in docs/dtypes.md):
- categories order as bool < integer < floating; the higher category wins;
- within a category the wider type wins (uint8 with int32 gives int32);
- a Python scalar is "weak": it never widens a tensor of its own category
  (``int32_tensor + 1`` stays int32, ``float16_tensor * 0.5`` stays float16);
  a Python float with an integer or bool tensor gives the default float (float32);
  a Python int with a bool tensor gives the default int (int32).
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import DTypeError


@dataclass(frozen=True, eq=False)
class DType:
    """One element type: its name, category, size and how it is packed in bytes."""

    name: str
    kind: str  # "b" bool, "u" unsigned int, "i" signed int, "f" float
    itemsize: int
    struct_char: str  # format character for struct / array ("?" is stored as "B")
    rank: int  # order within the promotion lattice

    @property
    def is_floating_point(self) -> bool:
        """True for float16, float32 and float64."""
        return self.kind == "f"

    @property
    def is_integer(self) -> bool:
        """True for the signed and unsigned integer types (not bool)."""
        return self.kind in "iu"

    @property
    def is_bool(self) -> bool:
        """True for bool."""
        return self.kind == "b"

    def __repr__(self) -> str:
        return f"pyburn.{self.name}"

    def __reduce__(self) -> str:
        return self.name


bool_ = DType("bool", "b", 1, "?", 0)
uint8 = DType("uint8", "u", 1, "B", 1)
int32 = DType("int32", "i", 4, "i", 2)
int64 = DType("int64", "i", 8, "q", 3)
float16 = DType("float16", "f", 2, "e", 4)
float32 = DType("float32", "f", 4, "f", 5)
float64 = DType("float64", "f", 8, "d", 6)

ALL_DTYPES: tuple[DType, ...] = (bool_, uint8, int32, int64, float16, float32, float64)
default_float = float32
default_int = int32

_BY_NAME = {d.name: d for d in ALL_DTYPES}
_ALIASES = {"float": float32, "double": float64, "half": float16, "int": int32, "long": int64,
            "bool_": bool_, "f32": float32, "f64": float64, "f16": float16, "i32": int32,
            "i64": int64, "u8": uint8}


def as_dtype(spec: object) -> DType:
    """Return the DType named by `spec` (a DType, a name such as "float32", a numpy dtype,
    or the Python types bool/int/float)."""
    if isinstance(spec, DType):
        return spec
    if spec is bool:
        return bool_
    if spec is int:
        return default_int
    if spec is float:
        return default_float
    name = getattr(spec, "name", spec)  # numpy dtypes and numpy scalar types
    if isinstance(spec, type) and hasattr(spec, "__name__") and not isinstance(name, str):
        name = spec.__name__
    if isinstance(name, str):
        found = _BY_NAME.get(name) or _ALIASES.get(name)
        if found is not None:
            return found
    raise DTypeError(f"unknown dtype {spec!r}; pyburn has {', '.join(_BY_NAME)}")


#: buffer-protocol format characters (struct's, which typed arrays arrive as) by dtype kind
_FORMAT_KINDS = {"?": "b", "e": "f", "f": "f", "d": "f", **dict.fromkeys("bhilqn", "i"),
                 **dict.fromkeys("BHILQN", "u")}


def buffer_dtype(view: memoryview) -> DType:
    """The dtype of a typed buffer's elements (a memoryview of format "f", "i", "B", ...: a
    page's Float32Array, Int32Array, Uint8Array arrive in Python so)."""
    kind = _FORMAT_KINDS.get(view.format.lstrip("<=@"))
    for dtype in ALL_DTYPES:
        if dtype.kind == kind and dtype.itemsize == view.itemsize:
            return dtype
    raise DTypeError(f"pyburn has no dtype for buffers of format {view.format!r} "
                     f"({view.itemsize}-byte elements); it has {', '.join(_BY_NAME)}")


def promote(a: DType, b: DType) -> DType:
    """The dtype of a binary op between tensors of dtypes `a` and `b`."""
    if a is b:
        return a
    return a if a.rank > b.rank else b


def scalar_dtype(value: object) -> DType:
    """The dtype a Python scalar would get on its own."""
    if isinstance(value, bool):
        return bool_
    if isinstance(value, int):
        return default_int
    if isinstance(value, float):
        return default_float
    raise DTypeError(f"expected a number or a tensor, got {type(value).__name__}")


def promote_with_scalar(tensor_dtype: DType, value: object) -> DType:
    """The dtype of a binary op between a tensor and a (weak) Python scalar."""
    sd = scalar_dtype(value)
    order = "bif"
    tk = "i" if tensor_dtype.kind == "u" else tensor_dtype.kind
    if order.index(sd.kind) <= order.index(tk):
        return tensor_dtype
    return sd
