"""What a PyTorch pickle may refer to: the allow-list of globals, what each one builds, and
the persistent IDs (``('storage', ...)``) that stand for storages.

The list is what ``torch.save`` writes for state dicts and training checkpoints: tensor and
parameter rebuild functions, storage classes, dtypes, ``torch.Size``, ``torch.device``,
``collections.OrderedDict``, and the builtins protocol 2 needs for bytes and sets. Each entry
is implemented here, in a few lines that check their arguments and build plain data or a
lazy tensor; none of them imports or calls anything from the file. Any other global (a
pickled ``nn.Module``, numpy objects, ``os.system``) raises `pyburn.FormatError` naming it.
"""

from __future__ import annotations

from typing import Any

from ...errors import FormatError
from ..elements import ELEMENTS, Element
from ..header import brief
from .lazy import PytorchTensor, Storage
from .pickle_reader import Buildable, Global, describe

# Element types PyTorch has and safetensors lacks: listed, never loaded.
_COMPLEX128 = Element("C128", 128, None, refusal="complex numbers")
_COMPLEX32 = Element("C32", 32, None, refusal="complex numbers")


def _element(name: str) -> Element:
    return ELEMENTS[name] if name in ELEMENTS else {"C128": _COMPLEX128, "C32": _COMPLEX32}[name]


#: typed storage classes (``torch.FloatStorage``, ...) and the element type of each
STORAGE_ELEMENTS = {
    "FloatStorage": "F32", "DoubleStorage": "F64", "HalfStorage": "F16",
    "BFloat16Storage": "BF16", "LongStorage": "I64", "IntStorage": "I32",
    "ShortStorage": "I16", "CharStorage": "I8", "ByteStorage": "U8", "BoolStorage": "BOOL",
    "ComplexFloatStorage": "C64", "ComplexDoubleStorage": "C128",
}
#: dtypes (``torch.float32``, ...; what ``_rebuild_tensor_v3`` names) and their element types
DTYPE_ELEMENTS = {
    "float32": "F32", "float64": "F64", "float16": "F16", "bfloat16": "BF16",
    "int64": "I64", "int32": "I32", "int16": "I16", "int8": "I8", "uint8": "U8",
    "bool": "BOOL", "uint16": "U16", "uint32": "U32", "uint64": "U64",
    "float8_e4m3fn": "F8_E4M3", "float8_e5m2": "F8_E5M2", "float8_e4m3fnuz": "F8_E4M3FNUZ",
    "float8_e5m2fnuz": "F8_E5M2FNUZ", "float8_e8m0fnu": "F8_E8M0",
    "complex64": "C64", "complex128": "C128", "complex32": "C32",
}


class ElementType(Global):
    """A storage class or a dtype: a name that stands for an element type (`element` is
    None for ``UntypedStorage``, whose size is in bytes)."""

    def __init__(self, module: str, name: str, element: Element | None):
        super().__init__(module, name)
        self.element = element


class PickledDict(dict, Buildable):
    """What ``collections.OrderedDict`` builds: a dict (insertion-ordered, as every dict is)
    that keeps the attributes a pickle gives it, such as a state dict's ``_metadata`` (the
    layer versions PyTorch records)."""

    def __init__(self, *args: Any):
        if len(args) > 1 or args and type(args[0]) not in (list, tuple, dict, PickledDict):
            raise FormatError(f"OrderedDict takes one list of pairs, got {len(args)} "
                              f"arguments")
        super().__init__(*args)
        #: attributes from the pickle (never set on the object itself)
        self.attributes: dict[str, Any] = {}

    def setstate(self, state: Any) -> None:
        """Keep `state` (a dict of attributes, or a (dict, slots) pair) in `attributes`."""
        parts = state if type(state) is tuple and len(state) == 2 else (state,)
        for part in parts:
            if part is None:
                continue
            if not isinstance(part, dict) or not all(isinstance(k, str) for k in part):
                raise FormatError(f"an OrderedDict's state is a dict of attributes, got "
                                  f"{describe(part)}")
            self.attributes.update(part)


def _element_of(value: Any, what: str) -> ElementType:
    if not isinstance(value, ElementType):
        raise FormatError(f"{what} is {describe(value)}, not a torch dtype or storage class")
    return value


def _rebuild(storage: Any, offset: Any, size: Any, stride: Any, element: Element | None,
             requires_grad: Any = False) -> PytorchTensor:
    if not isinstance(storage, Storage):
        raise FormatError(f"a tensor is rebuilt from {describe(storage)}, not a storage")
    if element is None:
        raise FormatError(f"the untyped storage {brief(storage.key)} needs a dtype "
                          f"(_rebuild_tensor_v3)")
    return PytorchTensor(storage, offset, size, stride, element, requires_grad)


def _rebuild_tensor(storage: Any, offset: Any, size: Any, stride: Any) -> PytorchTensor:
    return _rebuild(storage, offset, size, stride, getattr(storage, "element", None))


def _rebuild_tensor_v2(storage: Any, offset: Any, size: Any, stride: Any, requires_grad: Any,
                       backward_hooks: Any, metadata: Any = None) -> PytorchTensor:
    return _rebuild(storage, offset, size, stride, getattr(storage, "element", None),
                    requires_grad)


def _rebuild_tensor_v3(storage: Any, offset: Any, size: Any, stride: Any, requires_grad: Any,
                       backward_hooks: Any, dtype: Any, metadata: Any = None) -> PytorchTensor:
    element = _element_of(dtype, "a tensor's dtype").element
    return _rebuild(storage, offset, size, stride, element, requires_grad)


def _tensor_argument(data: Any) -> PytorchTensor:
    if not isinstance(data, PytorchTensor):
        raise FormatError(f"a parameter wraps {describe(data)}, not a tensor")
    return data


def _rebuild_parameter(data: Any, requires_grad: Any, backward_hooks: Any) -> PytorchTensor:
    tensor = _tensor_argument(data)
    tensor.requires_grad = requires_grad is True
    return tensor


def _rebuild_parameter_with_state(data: Any, requires_grad: Any, backward_hooks: Any,
                                  state: Any) -> PytorchTensor:
    return _rebuild_parameter(data, requires_grad, backward_hooks)


_REBUILDERS = ("_rebuild_tensor", "_rebuild_tensor_v2", "_rebuild_tensor_v3",
               "_rebuild_parameter", "_rebuild_parameter_with_state")


def _rebuild_from_type_v2(func: Any, new_type: Any, args: Any, state: Any) -> PytorchTensor:
    """How PyTorch pickles a tensor that carries Python attributes: `func(*args)` then the
    attributes; only the rebuild functions above, for Tensor or Parameter, are accepted."""
    if not (isinstance(func, Global) and func.module == "torch._utils"
            and func.name in _REBUILDERS):
        raise FormatError(f"_rebuild_from_type_v2 calls {describe(func)}")
    if not (isinstance(new_type, Global) and new_type.qualname in _TENSOR_TYPES):
        raise FormatError(f"_rebuild_from_type_v2 builds {describe(new_type)}, not a tensor")
    if type(args) is not tuple:
        raise FormatError(f"_rebuild_from_type_v2 passes {describe(args)} as arguments")
    return _tensor_argument(func.construct(args))


def _size(sizes: Any = ()) -> tuple[int, ...]:
    if type(sizes) is not tuple or not all(type(s) is int for s in sizes):
        raise FormatError(f"torch.Size takes a tuple of integers, got {describe(sizes)}")
    return sizes


def _device(kind: Any, index: Any = None) -> str:
    if not isinstance(kind, str) or not (index is None or type(index) is int):
        raise FormatError("torch.device takes a string and an optional integer")
    return kind if index is None or ":" in kind else f"{kind}:{index}"


def _encode(text: Any, encoding: Any = "utf-8") -> bytes:
    """``_codecs.encode``: how protocol 2 pickles bytes (as latin-1 text)."""
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1"):
        raise FormatError("_codecs.encode is allowed only to turn latin-1 text into bytes")
    return text.encode("latin-1")


def _collection(kind: type) -> Any:
    def build(items: Any = ()) -> Any:
        if type(items) not in (list, tuple, set, frozenset):
            raise FormatError(f"{kind.__name__} takes a list or tuple, got {describe(items)}")
        return kind(items)

    return build


def _bytearray(data: Any = b"", encoding: Any = None) -> bytearray:
    if isinstance(data, bytes) and encoding is None:
        return bytearray(data)
    if isinstance(data, str) and encoding in ("latin1", "latin-1"):
        return bytearray(data.encode("latin-1"))
    raise FormatError("bytearray takes bytes, or latin-1 text")


def _bytes(data: Any = b"") -> bytes:
    """``bytes()``: protocols 0-2 pickle an empty bytes object as a call with no arguments."""
    if not isinstance(data, bytes):
        raise FormatError("bytes takes bytes")
    return data


def _slice(*args: Any) -> slice:
    if not 1 <= len(args) <= 3 or not all(a is None or type(a) is int for a in args):
        raise FormatError("slice takes one to three integers or None")
    return slice(*args)


def _complex(real: Any = 0.0, imag: Any = 0.0) -> complex:
    if not all(type(v) in (int, float) for v in (real, imag)):
        raise FormatError("complex takes two numbers")
    return complex(real, imag)


_TENSOR_TYPES = ("torch.Tensor", "torch.nn.parameter.Parameter")


def _allowed() -> dict[tuple[str, str], Global]:
    table: list[Global] = [
        Global("collections", "OrderedDict", PickledDict),
        Global("torch._utils", "_rebuild_tensor", _rebuild_tensor),
        Global("torch._utils", "_rebuild_tensor_v2", _rebuild_tensor_v2),
        Global("torch._utils", "_rebuild_tensor_v3", _rebuild_tensor_v3),
        Global("torch._utils", "_rebuild_parameter", _rebuild_parameter),
        Global("torch._utils", "_rebuild_parameter_with_state", _rebuild_parameter_with_state),
        Global("torch._tensor", "_rebuild_from_type_v2", _rebuild_from_type_v2),
        Global("torch", "Size", _size),
        Global("torch", "device", _device),
        Global("torch", "Tensor"),
        Global("torch.nn.parameter", "Parameter"),
        Global("_codecs", "encode", _encode),
        ElementType("torch.storage", "UntypedStorage", None),
        ElementType("torch", "UntypedStorage", None),
    ]
    for name, element in STORAGE_ELEMENTS.items():
        for module in ("torch", "torch.cuda"):  # CUDA storage classes of old files
            table.append(ElementType(module, name, _element(element)))
    table += [ElementType("torch", name, _element(e)) for name, e in DTYPE_ELEMENTS.items()]
    for module in ("builtins", "__builtin__"):  # protocol 2 writes Python 2's name
        table += [Global(module, "set", _collection(set)),
                  Global(module, "frozenset", _collection(frozenset)),
                  Global(module, "bytearray", _bytearray), Global(module, "bytes", _bytes),
                  Global(module, "slice", _slice),
                  Global(module, "complex", _complex)]
    return {(g.module, g.name): g for g in table}


ALLOWED: dict[tuple[str, str], Global] = _allowed()


def find_global(module: str, name: str) -> Global:
    """The allow-listed global `module.name`, or a FormatError naming it."""
    found = ALLOWED.get((module, name))
    if found is not None:
        return found
    hint = ""
    if module.startswith(("torch.nn.modules", "__main__", "__torch__")):
        hint = (" This file holds a pickled model object (torch.save(model)) or TorchScript; "
                "save model.state_dict() with torch.save and load that instead.")
    qualname = f"{module}.{name}"
    qualname = qualname if len(qualname) <= 200 else qualname[:200] + "..."
    raise FormatError(f"the pickle asks for the global {qualname}, which "
                      f"is not on pyburn's allow-list (tensors, containers and a few torch "
                      f"types); nothing from the file was run.{hint}")


class StorageTable:
    """The storages a pickle's persistent IDs declare, by key: one `Storage` per key, shared
    by every tensor that views it. `legacy` files add a sixth field (a view of another
    storage) to each ID."""

    def __init__(self, legacy: bool, big_endian: bool = False):
        self.legacy = legacy
        self.big_endian = big_endian
        self.storages: dict[str, Storage] = {}

    def persistent_load(self, pid: Any) -> Storage:
        """The storage a persistent ID stands for (``persistent_load`` of the unpickler)."""
        if type(pid) is not tuple or not pid:
            raise FormatError(f"a persistent ID is {describe(pid)}, not a tuple")
        kind = pid[0]
        if kind == "module":
            raise FormatError("the file holds a pickled nn.Module with its source code "
                              "(torch.save(model)); save model.state_dict() instead")
        if kind != "storage":
            raise FormatError(f"unknown persistent ID kind {brief(kind)}; PyTorch files "
                              f"use 'storage'")
        if len(pid) != (6 if self.legacy else 5):
            raise FormatError(f"a storage's persistent ID has {len(pid)} fields, not "
                              f"{6 if self.legacy else 5}")
        stype = _element_of(pid[1], "a storage's type")
        key, location, numel = pid[2], pid[3], pid[4]
        if not isinstance(key, str) or not isinstance(location, str) or not _count(numel):
            raise FormatError("a storage's persistent ID needs a key, a location and a size")
        itemsize = 1 if stype.element is None else stype.element.bits // 8
        storage = self._declare(key, numel * itemsize, stype.element, location)
        view = pid[5] if self.legacy else None
        if view is None:
            return storage
        if (type(view) is not tuple or len(view) != 3 or not isinstance(view[0], str)
                or not _count(view[1]) or not _count(view[2])):
            raise FormatError(f"a storage view is {describe(view)}, not (key, offset, size)")
        view_key, start, size = view[0], view[1] * itemsize, view[2] * itemsize
        if start + size > storage.nbytes:
            raise FormatError(f"storage view {brief(view_key)} reaches past the end of "
                              f"storage {brief(key)}")
        child = self.storages.get(view_key)
        if child is None:
            child = Storage(view_key, size, stype.element, location, self.big_endian,
                            storage, start)
            self.storages[view_key] = child
        return child

    def _declare(self, key: str, nbytes: int, element: Element | None,
                 location: str) -> Storage:
        found = self.storages.get(key)
        if found is None:
            found = self.storages[key] = Storage(key, nbytes, element, location,
                                                 self.big_endian)
        elif found.nbytes != nbytes or found.element is not element or found.parent:
            raise FormatError(f"storage {brief(key)} is declared twice, differently")
        return found


def _count(value: Any) -> bool:
    return type(value) is int and value >= 0
