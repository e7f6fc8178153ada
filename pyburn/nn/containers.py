"""Containers of modules: `Sequential` (a pipeline), `ModuleList` and `ModuleDict`.

Their items are registered as submodules under their position ("0", "1", ...) or key, so
parameters, ``state_dict`` keys (``layers.0.weight``) and device moves reach them exactly as
in PyTorch.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from ..errors import ArgumentError, IndexOutOfRange
from .module import Module


class _Indexed(Module):
    """The list behaviour shared by Sequential and ModuleList: items named "0", "1", ...,
    renumbered after every insertion or deletion so the names stay positions."""

    def __init__(self, modules: Iterable[Module] = ()):
        super().__init__()
        for module in modules:
            self.append(module)

    def _position(self, index: int) -> int:
        n = len(self._modules)
        if isinstance(index, bool) or not isinstance(index, int):
            raise ArgumentError(f"{type(self).__name__} indices are ints or slices, got "
                                f"{type(index).__name__}")
        if not -n <= index < n:
            raise IndexOutOfRange(f"index {index} is out of range for a "
                                  f"{type(self).__name__} of {n} modules")
        return index % n

    def _like(self, modules: list[Module]) -> _Indexed:
        """A new container of this kind holding `modules`."""
        return type(self)(modules)

    def _renumber(self, modules: list[Module]) -> None:
        self._modules.clear()
        for i, module in enumerate(modules):
            self.add_module(str(i), module)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return self._like(list(self._modules.values())[index])
        return list(self._modules.values())[self._position(index)]

    def __setitem__(self, index: int, module: Module) -> None:
        self.add_module(str(self._position(index)), module)

    def __delitem__(self, index: int | slice) -> None:
        modules = list(self._modules.values())
        if isinstance(index, slice):
            del modules[index]
        else:
            del modules[self._position(index)]
        self._renumber(modules)

    def append(self, module: Module) -> _Indexed:
        """Add `module` at the end; returns this container."""
        self.add_module(str(len(self._modules)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> _Indexed:
        """Append each of `modules`; returns this container."""
        for module in modules:
            self.append(module)
        return self

    def insert(self, index: int, module: Module) -> None:
        """Put `module` before position `index` (PyTorch's and list's rule)."""
        modules = list(self._modules.values())
        modules.insert(index, module)
        self._renumber(modules)

    def pop(self, index: int = -1) -> Module:
        """Remove and return the module at `index`."""
        module = self[index]
        del self[index]
        return module

    def __add__(self, other: _Indexed) -> _Indexed:
        return self._like([*self, *other])

    def __iadd__(self, modules: Iterable[Module]) -> _Indexed:
        return self.extend(modules)


class Sequential(_Indexed):
    """Modules applied in order, each to the previous one's output.

    ``Sequential(a, b, c)`` names them "0", "1", "2"; ``Sequential(OrderedDict(...))`` (or
    any mapping) keeps the given names. Indexing gives a module, slicing a new Sequential.

    >>> import pyburn
    >>> from pyburn import nn
    >>> net = nn.Sequential(nn.Linear(4, 8, device="flex"), nn.ReLU(),
    ...                     nn.Linear(8, 2, device="flex"))
    >>> net(pyburn.ones(3, 4, device="flex")).shape
    (3, 2)
    >>> list(net.state_dict())
    ['0.weight', '0.bias', '2.weight', '2.bias']
    """

    def __init__(self, *modules: Module | Mapping[str, Module]):
        if len(modules) == 1 and isinstance(modules[0], Mapping):
            super().__init__()
            for name, module in modules[0].items():
                self.add_module(name, module)
        else:
            super().__init__(modules)

    def _like(self, modules: list[Module]) -> Sequential:
        return Sequential(*modules)

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):  # keep the names, as PyTorch does
            return Sequential(dict(list(self._modules.items())[index]))
        return super().__getitem__(index)

    def forward(self, input: Any) -> Any:
        """`input` through every module in turn."""
        for module in self:
            input = module(input)
        return input


class ModuleList(_Indexed):
    """A list of modules, registered so their parameters belong to the owner (a plain list
    would hide them). It has no ``forward``: the owner decides how to call them.

    >>> from pyburn import nn
    >>> blocks = nn.ModuleList(nn.Linear(2, 2, device="flex") for _ in range(3))
    >>> len(blocks), len(list(blocks.parameters()))
    (3, 6)
    """

    def _child_lines(self) -> list[str]:
        """Runs of consecutive items with the same repr are shown once, as PyTorch does:
        "(0-11): 12 x Block(...)"."""
        runs: list[tuple[int, int, str]] = []  # (first index, last index, repr)
        for i, module in enumerate(self._modules.values()):
            text = repr(module)
            if runs and runs[-1][2] == text:
                runs[-1] = (runs[-1][0], i, text)
            else:
                runs.append((i, i, text))
        return [f"({first}): {text}" if first == last else
                f"({first}-{last}): {last - first + 1} x {text}" for first, last, text in runs]


class ModuleDict(Module):
    """An ordered dict of modules, registered under their keys.

    >>> from pyburn import nn
    >>> heads = nn.ModuleDict({"cls": nn.Linear(4, 3, device="flex"), "box": nn.Identity()})
    >>> list(heads), list(heads.state_dict())
    (['cls', 'box'], ['cls.weight', 'cls.bias'])
    """

    def __init__(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]] = ()):
        super().__init__()
        self.update(modules)

    def __getitem__(self, key: str) -> Module:
        if key not in self._modules:
            raise KeyError(f"ModuleDict has no key {key!r}; keys: {list(self._modules)}")
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: object) -> bool:
        return key in self._modules

    def keys(self) -> Iterable[str]:
        """The keys, in insertion order."""
        return self._modules.keys()

    def values(self) -> Iterable[Module]:
        """The modules, in insertion order."""
        return self._modules.values()

    def items(self) -> Iterable[tuple[str, Module]]:
        """(key, module) pairs, in insertion order."""
        return self._modules.items()

    def update(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]]) -> None:
        """Add or replace entries from a mapping or from (key, module) pairs."""
        pairs = modules.items() if isinstance(modules, Mapping) else modules
        for pair in pairs:
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise ArgumentError(f"ModuleDict.update takes a mapping or (key, module) "
                                    f"pairs, got an element {pair!r}")
            self.add_module(*pair)

    def pop(self, key: str) -> Module:
        """Remove the entry `key` and return its module."""
        module = self[key]
        del self._modules[key]
        return module

    def clear(self) -> None:
        """Remove every entry."""
        self._modules.clear()
