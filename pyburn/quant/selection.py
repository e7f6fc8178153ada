"""`select`: the layers of a model that `quantize` and `calibrate` work on (`targets=`,
`skip=`), and `replace`, which puts a new layer in a model."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from ..errors import ArgumentError
from ..nn.module import Module
from .layers import QUANTIZED, QuantizedLayer

__all__ = ["Filter", "replace", "select"]

#: a selection of layers: dotted module names (a name selects the module and everything in
#: it) and module types, mixed freely
Filter = Collection[str | type] | None


def select(module: Module, targets: Filter = None, skip: Filter = ()
           ) -> list[tuple[str, Module]]:
    """The (name, layer) pairs of `module`'s float layers that have a quantized form, in
    `named_modules` order, within `targets` (all when None) and not within `skip`. Raises
    `pyburn.ArgumentError` when a name in either is not a module of `module`, or when
    nothing is left."""
    modules = dict(module.named_modules())
    wanted = _matcher(targets, modules, "targets")
    unwanted = _matcher(skip, modules, "skip")
    chosen = [(name, m) for name, m in modules.items() if type(m) in QUANTIZED
              and (wanted is None or wanted(name, m)) and not (unwanted and unwanted(name, m))]
    if not chosen:
        done = sum(isinstance(m, QuantizedLayer) for m in modules.values())
        note = f" ({done} layers are quantized already)" if done else ""
        raise ArgumentError(
            f"nothing to quantize in {type(module).__name__}: no "
            f"{', '.join(t.__name__ for t in QUANTIZED)} layer is selected{note} "
            f"(targets={_shown(targets)}, skip={_shown(skip)})")
    return chosen


def replace(root: Module, name: str, new: Module) -> Module:
    """Put `new` at dotted `name` under `root`; returns the root (`new` for name "")."""
    if not name:
        return new
    parent, _, child = name.rpartition(".")
    setattr(root.get_submodule(parent), child, new)
    return root


def _matcher(given: Filter, modules: dict[str, Module], what: str) -> Any:
    """A predicate (name, module) -> bool for a `Filter` (None for None)."""
    if given is None:
        return None
    if isinstance(given, (str, type)):
        given = [given]
    names = [g for g in given if isinstance(g, str)]
    types = tuple(g for g in given if isinstance(g, type))
    if len(names) + len(types) != len(given):
        raise ArgumentError(f"{what} holds module names and module types, got "
                            f"{list(given)!r}")
    unknown = [n for n in names if n not in modules]
    if unknown:
        raise ArgumentError(f"{what} names {', '.join(map(repr, unknown))}, which "
                            f"the model does not have (its modules: "
                            f"{', '.join(repr(n) for n in modules if n)})")

    def matches(name: str, module: Module) -> bool:
        inside = any(name == n or name.startswith(n + ".") or not n for n in names)
        return inside or isinstance(module, types)

    return matches


def _shown(given: Filter) -> str:
    if given is None or isinstance(given, (str, type)):
        return repr(given)
    return "[" + ", ".join(g.__name__ if isinstance(g, type) else repr(g) for g in given) + "]"
