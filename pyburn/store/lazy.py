"""Lazy tensors and the store they live in: a mapping of names to tensors whose shapes and
element types are known at once and whose bytes are read from the file only when used.

A `LazyStateDict` is what ``Module.load_from`` takes, whatever the file format: listing the
keys of a 10 GB checkpoint reads only its index (the pickle, the safetensors header), and
loading it into a model reads one tensor at a time, so memory stays flat. Stores are
immutable; ``with_key_remapping``, ``with_filter`` and ``with_top_level_key`` return new
views of the same lazy tensors.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from .._tensor import Tensor, wrap
from ..devices import Device
from ..devices import device as as_device
from ..dtypes import DType, as_dtype
from ..errors import ArgumentError
from .elements import ELEMENTS, NAMES, Element
from .header import brief

#: what ``with_filter`` and ``load_from(filter=)`` take: a regular expression (searched in
#: each key) or a predicate on keys
KeyFilter = str | re.Pattern[str] | Callable[[str], bool]


class LazyTensor:
    """A tensor in a file: `shape` and `element` (the file's element type) are known, its
    bytes are read by `read` or `load`.

    `dtype` is the pyburn dtype it loads as (BF16 loads as float32; see docs/store.md).
    """

    #: the dimensions
    shape: tuple[int, ...]
    #: the element type in the file ("F32", "BF16", ...: safetensors' names)
    element: Element
    #: the key it was first listed under, for error messages
    name: str = ""

    @property
    def label(self) -> str:
        """How error messages name this tensor."""
        return f"tensor {brief(self.name)}" if self.name else "a tensor"

    @property
    def dtype(self) -> DType:
        """The pyburn dtype it loads as; raises `pyburn.DTypeError` for element types pyburn
        cannot hold (complex numbers, 4-bit floats)."""
        return self.element.target(self.label)

    @property
    def numel(self) -> int:
        """The number of elements."""
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def nbytes(self) -> int:
        """The size of its elements in the file's element type."""
        return self.numel * self.element.bits // 8

    def read(self) -> bytes | bytearray:
        """Its elements as C-ordered little-endian bytes in the file's element type."""
        raise NotImplementedError

    def load(self, device: Device | str | None = None, dtype: Any = None) -> Tensor:
        """The tensor on `device` (default: the default device), converted to `dtype` when
        given. Element types the device cannot store are converted on the flex device first
        (an int64 buffer bound for a GPU without int64)."""
        dev = as_device(device)
        own = self.dtype
        want = own if dtype is None else as_dtype(dtype)
        data = self.element.decode(self.read(), self.label)
        home = dev if own in dev.backend.dtypes else as_device("flex")
        loaded = wrap(home.backend.from_bytes(data, self.shape, own), self.shape, own, home)
        return loaded.cast(want).to(dev)

    def map(self, fn: Callable[[Tensor], Tensor], shape: tuple[int, ...]) -> LazyTensor:
        """A lazy tensor of `shape` that is ``fn(this tensor)`` when loaded: how an adapter
        changes a layout (``t.map(lambda x: x.T, t.shape[::-1])``) without reading now."""
        return MappedTensor(self, fn, shape)

    def __repr__(self) -> str:
        loads_as = self.element.dtype.name if self.element.dtype else "not loadable"
        return (f"{type(self).__name__}(shape={self.shape}, element={self.element.name} -> "
                f"{loads_as}"
                f"{', name=' + repr(self.name) if self.name else ''})")


class MemoryTensor(LazyTensor):
    """A tensor already in memory, behind the `LazyTensor` interface (for stores built from
    a dict of tensors, and for saving through adapters)."""

    def __init__(self, tensor: Tensor, name: str = ""):
        self.tensor = tensor
        self.shape = tensor.shape
        self.element = ELEMENTS[NAMES[tensor.dtype]]
        self.name = name

    def read(self) -> bytes:
        """The tensor's bytes."""
        return self.tensor.to_bytes()

    def load(self, device: Device | str | None = None, dtype: Any = None) -> Tensor:
        """The tensor (detached) on `device`, in `dtype` when given."""
        x = self.tensor.detach()
        dev = as_device(device)
        want = x.dtype if dtype is None else as_dtype(dtype)
        if want in x.device.backend.dtypes:  # cast where both dtypes exist, then move
            return x.cast(want).to(dev)
        return x.to(dev).cast(want)


class MappedTensor(LazyTensor):
    """`base` passed through `fn` (pyburn tensor to pyburn tensor of `shape`, same dtype)
    when loaded; see `LazyTensor.map`."""

    def __init__(self, base: LazyTensor, fn: Callable[[Tensor], Tensor],
                 shape: tuple[int, ...]):
        self.base = base
        self.fn = fn
        self.shape = tuple(shape)
        self.element = ELEMENTS[NAMES[base.dtype]]
        self.name = base.name

    def read(self) -> bytes:
        """The mapped tensor's bytes (computed on the flex device)."""
        return self.load("flex").to_bytes()

    def load(self, device: Device | str | None = None, dtype: Any = None) -> Tensor:
        """``fn`` of the base tensor, on `device`, in `dtype` when given."""
        out = self.fn(self.base.load(device))
        if out.shape != self.shape:
            raise ArgumentError(f"{self.label}: the adapter's function gave shape {out.shape}, "
                                f"not the {self.shape} it declared")
        return out if dtype is None else out.cast(dtype)


class LazyStateDict(Mapping[str, LazyTensor]):
    """A store: names mapped to lazy tensors, with the file's `metadata`.

    >>> import pyburn
    >>> sd = pyburn.store.LazyStateDict.from_tensors({"fc.weight": pyburn.ones(2, 3)})
    >>> sd["fc.weight"].shape, list(sd.with_key_remapping(r"^fc\\.", "head."))
    ((2, 3), ['head.weight'])
    """

    def __init__(self, tensors: Mapping[str, LazyTensor], *, metadata: Mapping[str, Any] | None
                 = None, adapter: Any = None, device: Device | str | None = None):
        self._tensors = dict(tensors)
        for name, t in self._tensors.items():
            if not t.name:
                t.name = name
        #: what the file says about itself (safetensors' ``__metadata__``; for PyTorch files
        #: the format, archive name, byte order and top-level key)
        self.metadata: dict[str, Any] = dict(metadata or {})
        #: the adapter ``Module.load_from`` applies before any the caller gives (PyTorch
        #: files get `pyburn.store.PyTorchAdapter`)
        self.adapter = adapter
        #: where `tensor` and `load` put tensors (None: the default device)
        self.device = device

    @classmethod
    def from_tensors(cls, tensors: Mapping[str, Tensor]) -> LazyStateDict:
        """A store of tensors already in memory (e.g. another model's ``state_dict()``)."""
        return cls({name: MemoryTensor(t, name) for name, t in tensors.items()})

    def __getitem__(self, key: str) -> LazyTensor:
        try:
            return self._tensors[key]
        except KeyError:
            raise KeyError(key) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._tensors)

    def __len__(self) -> int:
        return len(self._tensors)

    def __repr__(self) -> str:
        names = list(self._tensors)
        shown = ", ".join(map(brief, names[:5])) + (", ..." if len(names) > 5 else "")
        size = sum(t.nbytes for t in self._tensors.values())
        return f"{type(self).__name__}({len(names)} tensors, {size / 1e6:.1f} MB: {shown})"

    def tensor(self, key: str) -> Tensor:
        """The tensor under `key`, read now, on this store's device."""
        return self[key].load(self.device)

    def load(self) -> dict[str, Tensor]:
        """Every tensor, read now, on this store's device."""
        return {name: t.load(self.device) for name, t in self._tensors.items()}

    def with_key_remapping(self, pattern: str | re.Pattern[str], replacement: str
                           ) -> LazyStateDict:
        """A view with every key rewritten by ``re.sub(pattern, replacement, key)``, e.g.
        ``(r"^module\\.", "")`` drops DataParallel's prefix, ``(r"^conv(\\d)", r"layer\\1")``
        renames layers. Two keys becoming one is an error."""
        regex = _compile(pattern, "a key remapping pattern")
        renamed: dict[str, LazyTensor] = {}
        origin: dict[str, str] = {}
        for key, value in self._tensors.items():
            try:
                new = regex.sub(replacement, key)
            except (re.error, IndexError) as exc:
                raise ArgumentError(f"key remapping {regex.pattern!r} -> {replacement!r} "
                                    f"failed on {brief(key)}: {exc}") from None
            if new in renamed:
                raise ArgumentError(f"key remapping {regex.pattern!r} -> {replacement!r} maps "
                                    f"both {brief(origin[new])} and {brief(key)} to "
                                    f"{brief(new)}")
            renamed[new], origin[new] = value, key
        return self._derive(renamed)

    def with_filter(self, keep: KeyFilter) -> LazyStateDict:
        """A view of the keys that `keep` accepts (a regular expression searched in each key,
        or a predicate)."""
        accepts = key_predicate(keep)
        return self._derive({k: v for k, v in self._tensors.items() if accepts(k)})

    def with_top_level_key(self, key: str) -> LazyStateDict:
        """A view of the tensors under `key` with the prefix ``key.`` removed: a checkpoint's
        ``{"state_dict": {...}, "epoch": 3}`` (nested containers are flattened with dots),
        or the ``model.`` part of a pyburn checkpoint. ``""`` is the whole store."""
        if not key:
            return self
        prefix = key + "."
        found = {k[len(prefix):]: v for k, v in self._tensors.items() if k.startswith(prefix)}
        if not found:
            tops = list(dict.fromkeys(k.split(".", 1)[0] for k in self._tensors))
            raise ArgumentError(f"the store has no tensors under the top-level key {brief(key)};"
                                f" its top-level keys are {', '.join(map(brief, tops[:20]))}"
                                f"{', ...' if len(tops) > 20 else ''}")
        return self._derive(found)

    def _derive(self, tensors: dict[str, LazyTensor]) -> LazyStateDict:
        return LazyStateDict(tensors, metadata=self.metadata, adapter=self.adapter,
                             device=self.device)


def _compile(pattern: str | re.Pattern[str], what: str) -> re.Pattern[str]:
    if isinstance(pattern, re.Pattern):
        return pattern
    if not isinstance(pattern, str):
        raise ArgumentError(f"{what} is a str or a compiled regex, got {type(pattern).__name__}")
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ArgumentError(f"{what} {pattern!r} is not a valid regular expression: {exc}"
                            ) from None


def key_predicate(keep: KeyFilter) -> Callable[[str], bool]:
    """`keep` as a predicate on keys: a regex is searched in the key, a callable is used
    as it is."""
    if callable(keep) and not isinstance(keep, re.Pattern):
        return lambda key: bool(keep(key))
    regex = _compile(keep, "a key filter")
    return lambda key: regex.search(key) is not None
