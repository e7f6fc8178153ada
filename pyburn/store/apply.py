"""Applying a store to a module (``Module.load_from``), and a module's tensors through an
adapter on their way to a file (``pyburn.store.save(..., adapter=)``).

Loading matches the model's ``state_dict`` keys with the store's, after the store's keys went
through the top-level key, the remappings (in order) and the filter. Every check that needs
no tensor bytes runs first (names, shapes, dtypes the devices can hold): a failure changes
nothing. Then the tensors are read one at a time, each straight onto its parameter's device
and into the parameter in place (optimizers keep their references), so memory holds one
file tensor at a time.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ArgumentError, DTypeError
from ..ops.rebinding import rebind
from ..tape import no_grad
from .adapters import Adapter, Chain, Entry, as_adapter
from .lazy import KeyFilter, MemoryTensor, key_predicate
from .stores import open_store

if TYPE_CHECKING:  # pyburn.nn is imported after pyburn.store
    from .._tensor import Tensor
    from ..nn import Module

#: what ``key_remap=`` takes: (pattern, replacement) pairs applied in order, or a dict
KeyRemap = Sequence[tuple[str | re.Pattern[str], str]] | Mapping[str, str]
Shape = tuple[int, ...]


@dataclass(frozen=True)
class ApplyResult:
    """What ``Module.load_from`` did: the model keys it `loaded`; the model keys the store
    lacks (`missing`); the store keys the model lacks (`unused`); the keys whose shapes differ
    (`mismatched`: key -> (the model's shape, the file's)); the keys the file lacks whose
    model value an adapter kept (`kept`); the model keys the filter left out (`skipped`)."""

    loaded: list[str]
    missing: list[str]
    unused: list[str]
    mismatched: dict[str, tuple[Shape, Shape]]
    kept: list[str]
    skipped: list[str]

    @property
    def all_matched(self) -> bool:
        """True when nothing was missing, unused or mis-shaped."""
        return not (self.missing or self.unused or self.mismatched)

    def report(self, owner: str) -> str:
        """Every problem, readably, for the error a load without `allow_partial` raises."""
        lines = [f"cannot load the store into {owner}:"]
        if self.missing:
            lines.append(f"  {len(self.missing)} missing (in the model, not in the store): "
                         + _names(self.missing))
        if self.unused:
            lines.append(f"  {len(self.unused)} unused (in the store, not in the model): "
                         + _names(self.unused))
        for key, (mine, theirs) in list(self.mismatched.items())[:20]:
            lines.append(f"  shape mismatch for {key!r}: the model has {mine}, the store "
                         f"{theirs}")
        if len(self.mismatched) > 20:
            lines.append(f"  ... and {len(self.mismatched) - 20} more shape mismatches")
        lines.append("  (key_remap= renames the store's keys, filter= selects keys, "
                     "allow_partial=True loads what matches)")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"ApplyResult(loaded={len(self.loaded)}, missing={self.missing}, unused="
                f"{self.unused}, mismatched={self.mismatched}, kept={self.kept}, skipped="
                f"{len(self.skipped)})")


def _names(keys: list[str], limit: int = 20) -> str:
    shown = ", ".join(map(repr, keys[:limit]))
    return shown + (f", ... ({len(keys) - limit} more)" if len(keys) > limit else "")


def _remappings(key_remap: KeyRemap) -> list[tuple[Any, str]]:
    pairs = list(key_remap.items()) if isinstance(key_remap, Mapping) else list(key_remap)
    for pair in pairs:
        if not (isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[1], str)):
            raise ArgumentError(f"key_remap takes (pattern, replacement) pairs or a dict, got "
                                f"an item {pair!r}")
    return pairs


def _entries(module: Module) -> list[tuple[str, Module, str, Tensor]]:
    """(key, owning module, attribute name, tensor) for each ``state_dict`` entry."""
    found = []
    for key, target in module.state_dict(keep_vars=True).items():
        path, _, name = key.rpartition(".")
        found.append((key, module.get_submodule(path), name, target))
    return found


def load_into(module: Module, store: Any, *, key_remap: KeyRemap = (),
              filter: KeyFilter | None = None, allow_partial: bool = False,
              top_level_key: str | None = None, adapter: Adapter | Sequence[Adapter] | None
              = None) -> ApplyResult:
    """Load `store` (a `LazyStateDict`, or a PyTorch or safetensors file as a path, bytes or
    a file object) into `module`'s parameters and buffers; see ``Module.load_from``."""
    if not isinstance(allow_partial, bool):
        raise ArgumentError(f"allow_partial is a bool, got {allow_partial!r}")
    source = open_store(store, top_level_key=top_level_key)
    for pattern, replacement in _remappings(key_remap):
        source = source.with_key_remapping(pattern, replacement)
    accepts = key_predicate(filter) if filter is not None else (lambda key: True)
    chain = Chain([as_adapter(source.adapter), as_adapter(adapter)])
    ready: list[Entry] = []
    loaded, missing, kept, skipped = [], [], [], []
    mismatched: dict[str, tuple[Shape, Shape]] = {}
    model_keys = set()
    for key, owner, name, target in _entries(module):
        model_keys.add(key)
        if not accepts(key):
            skipped.append(key)
            continue
        entry = chain.load(Entry(key, owner, name, target, source.get(key), target.dtype))
        if entry.value is None:
            (kept if entry.keep else missing).append(key)
        elif entry.value.shape != target.shape:
            mismatched[key] = (target.shape, entry.value.shape)
        else:
            ready.append(entry)
            loaded.append(key)
    unused = [k for k in source if k not in model_keys and accepts(k)]
    result = ApplyResult(loaded, missing, unused, mismatched, kept, skipped)
    if not allow_partial and not result.all_matched:
        raise ArgumentError(result.report(type(module).__name__))
    for entry in ready:  # refuse before changing anything
        entry.value.element.target(entry.value.label)  # DTypeError: complex, 4-bit, ...
        device = entry.target.device
        if entry.dtype not in device.backend.dtypes:
            raise DTypeError(f"{entry.key!r} would become {entry.dtype.name}, which device "
                             f"{device.name!r} does not store")
    with no_grad():
        for entry in ready:
            target = entry.target
            value = entry.value.load(target.device, entry.dtype)
            if entry.dtype is not target.dtype:  # an adapter changes the model's dtype
                rebind(target, target.device, entry.dtype)
            target.assign_(value)
    return result


def adapted_state(module: Module, adapter: Adapter | Sequence[Adapter]) -> dict[str, Tensor]:
    """`module`'s ``state_dict`` with each tensor passed through the adapter's `save`."""
    chain = as_adapter(adapter)
    out = {}
    for key, owner, name, target in _entries(module):
        value = target.detach()
        entry = chain.save(Entry(key, owner, name, target, MemoryTensor(value, key),
                                 value.dtype))
        out[key] = entry.value.load(value.device, entry.dtype)
    return out

