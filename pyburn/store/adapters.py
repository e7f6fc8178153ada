"""Adapters: rules applied to each tensor on its way between a file and a model.

``Module.load_from`` hands every model tensor to the adapter as an `Entry` (the model's key,
the module that owns the tensor and its attribute name, the model's tensor, the file's lazy
tensor, and the dtype it will get), and loads what comes back. Saving through
``pyburn.store.save(model, path, adapter=...)`` does the same in the other direction. An
adapter can change the dtype, replace the value (another `LazyTensor`: a transposed or
converted view, read when loaded), or keep the model's value for a tensor the file lacks.
Adapters chain: ``PyTorchAdapter().then(HalfPrecision())``, or a list.

Layouts. pyburn's layers keep PyTorch's parameter names, shapes and layouts (Linear's weight
is (out_features, in_features), conv weights are (out, in/groups, *kernel), recurrent gates
are in PyTorch's order), so `PyTorchAdapter` transforms no tensor. What it does handle is
what older PyTorch versions did not save (see its docstring).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..dtypes import DType, float16, float32
from ..errors import ArgumentError
from .lazy import LazyTensor

if TYPE_CHECKING:  # pyburn.nn is imported after pyburn.store
    from .._tensor import Tensor
    from ..nn import Module


@dataclass(frozen=True)
class Entry:
    """One tensor on its way between a file and a model, as adapters see it."""

    #: the model's key ("layer1.0.bn1.running_mean")
    key: str
    #: the module that owns the tensor, and the tensor's attribute name in it
    module: Module
    name: str
    #: the model's tensor
    target: Tensor
    #: loading: the file's tensor (None when the file lacks it); saving: the model's tensor
    value: LazyTensor | None
    #: the dtype the tensor will have: in the model (loading) or in the file (saving)
    dtype: DType
    #: loading: the file lacks the tensor, and the model's own value is right
    keep: bool = False

    def module_is(self, kinds: Iterable[str | type]) -> bool:
        """Whether the owning module is one of `kinds` (classes, or class names matched
        against the module's class and its bases)."""
        names = {cls.__name__ for cls in type(self.module).__mro__}
        return any(kind in names if isinstance(kind, str) else isinstance(self.module, kind)
                   for kind in kinds)


class Adapter:
    """Base of the adapters: `load` and `save` return the entry unchanged; subclasses
    override what they adapt."""

    def load(self, entry: Entry) -> Entry:
        """Adapt a tensor on its way from a file into the model."""
        return entry

    def save(self, entry: Entry) -> Entry:
        """Adapt a model tensor on its way into a file."""
        return entry

    def then(self, other: Adapter) -> Chain:
        """This adapter followed by `other` when loading (and preceded by it when saving)."""
        return Chain([self, other])


class Chain(Adapter):
    """Several adapters: loading applies them in order, saving in reverse order, so that a
    chain undoes on load what it did on save."""

    def __init__(self, adapters: Sequence[Adapter]):
        self.adapters = [as_adapter(a) for a in adapters]

    def load(self, entry: Entry) -> Entry:
        """Each adapter's `load`, first to last."""
        for adapter in self.adapters:
            entry = adapter.load(entry)
        return entry

    def save(self, entry: Entry) -> Entry:
        """Each adapter's `save`, last to first."""
        for adapter in reversed(self.adapters):
            entry = adapter.save(entry)
        return entry

    def then(self, other: Adapter) -> Chain:
        """This chain with `other` at its end."""
        return Chain([*self.adapters, other])

    def __repr__(self) -> str:
        return f"Chain({self.adapters!r})"


class PyTorchAdapter(Adapter):
    """PyTorch checkpoints into pyburn models; the default adapter of PyTorch files.

    Every layout is the same in both (no tensor is transposed or renamed). The difference is
    history: checkpoints from PyTorch before 0.4.1 have no ``num_batches_tracked`` in their
    batch and instance norms, and PyTorch loads them by keeping the model's counter; so does
    this adapter, which reports those keys as kept rather than missing."""

    def load(self, entry: Entry) -> Entry:
        """Keep the model's ``num_batches_tracked`` where the file has none."""
        if entry.value is None and entry.name == "num_batches_tracked":
            return replace(entry, keep=True)
        return entry

    def __repr__(self) -> str:
        return "PyTorchAdapter()"


#: the modules `HalfPrecision` leaves in float32 by default: their running statistics
#: (variances of large activations, counts) lose too much in float16
BATCH_NORMS = ("BatchNorm1d", "BatchNorm2d", "BatchNorm3d")


class HalfPrecision(Adapter):
    """float32 <-> float16: floating-point tensors become float16 on the other side, except
    those of the modules in `keep` (BatchNorm by default), which become float32.

    Saving writes float16 files of half the size; loading makes the model's floating-point
    parameters and buffers float16 (their dtype changes in place, like ``model.half()``),
    with BatchNorm kept in float32. Integer and bool tensors pass unchanged."""

    def __init__(self, keep: Iterable[str | type] = BATCH_NORMS):
        self.keep = tuple(keep)

    def _convert(self, entry: Entry) -> Entry:
        if not entry.dtype.is_floating_point:
            return entry
        return replace(entry, dtype=float32 if entry.module_is(self.keep) else float16)

    def load(self, entry: Entry) -> Entry:
        """The model's tensor becomes float16 (float32 in kept modules)."""
        return self._convert(entry)

    def save(self, entry: Entry) -> Entry:
        """The file's tensor is float16 (float32 in kept modules)."""
        return self._convert(entry)

    def __repr__(self) -> str:
        return f"HalfPrecision(keep={self.keep!r})"


def as_adapter(value: Any) -> Adapter:
    """`value` as one adapter: an Adapter, a list of them (a `Chain`), or None (no change)."""
    if value is None:
        return Adapter()
    if isinstance(value, Adapter):
        return value
    if isinstance(value, (list, tuple)):
        return Chain(value)
    raise ArgumentError(f"an adapter is a pyburn.store.Adapter or a list of them, got "
                        f"{type(value).__name__}")
