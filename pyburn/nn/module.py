"""`Module`, the base class of every layer and model, with PyTorch's API.

A module keeps three ordered registries, filled by plain attribute assignment: parameters
(`Parameter` values), buffers (tensors registered with `register_buffer`: running statistics,
constants) and submodules (`Module` values). Traversal, ``state_dict`` keys
(``features.0.weight``), device moves and train/eval switches all walk those registries in
registration order, which is PyTorch's order, so weights map one to one between the two.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .._tensor import Tensor
from ..buffer import flatten_nested
from ..devices import Device
from ..devices import device as as_device
from ..dtypes import as_dtype, default_int
from ..errors import ArgumentError, DTypeError, PyburnError, ShapeError
from ..ops.rebinding import rebind
from ..tape import no_grad
from .parameter import Parameter, as_value

__all__ = ["LoadResult", "Module", "Parameter"]

#: the ONNX exporter's tracer while ``pyburn.onnx.export`` runs a forward pass, else None
#: (pyburn/onnx/exporter/trace.py)
_tracer: Any = None


@dataclass(frozen=True)
class LoadResult:
    """What `Module.load_state_dict` found. Unpacks like PyTorch's result,
    ``missing, unexpected = model.load_state_dict(sd, strict=False)``; `mismatched_keys`
    maps each key whose shape differs to (the model's shape, the given shape)."""

    missing_keys: list[str]
    unexpected_keys: list[str]
    mismatched_keys: dict[str, tuple[tuple[int, ...], tuple[int, ...]]]

    def __iter__(self) -> Iterator[list[str]]:
        return iter((self.missing_keys, self.unexpected_keys))

    @property
    def all_matched(self) -> bool:
        """True when every key matched in name and shape."""
        return not (self.missing_keys or self.unexpected_keys or self.mismatched_keys)

    def report(self, owner: str) -> str:
        """A readable account of every problem, for the error a strict load raises."""
        lines = [f"error loading state_dict into {owner}:"]
        if self.missing_keys:
            lines.append("  missing keys (in the model, not in the state_dict): "
                         + ", ".join(map(repr, self.missing_keys)))
        if self.unexpected_keys:
            lines.append("  unexpected keys (in the state_dict, not in the model): "
                         + ", ".join(map(repr, self.unexpected_keys)))
        for key, (mine, given) in self.mismatched_keys.items():
            lines.append(f"  size mismatch for {key!r}: the model has shape {mine}, the "
                         f"state_dict has {given}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        if self.all_matched:
            return "<All keys matched successfully>"
        return (f"LoadResult(missing_keys={self.missing_keys}, unexpected_keys="
                f"{self.unexpected_keys}, mismatched_keys={self.mismatched_keys})")


def _check_name(owner: Module, name: Any, kind: str) -> None:
    if not isinstance(name, str):
        raise ArgumentError(f"a {kind} name is a str, got {type(name).__name__}")
    if not name or "." in name:
        raise ArgumentError(f"a {kind} name cannot be empty or contain '.', got {name!r}")
    if "_parameters" not in owner.__dict__:
        raise ArgumentError(f"cannot register the {kind} {name!r} before Module.__init__() "
                            f"ran: call super().__init__() first in "
                            f"{type(owner).__name__}.__init__")


class Module:
    """Base class of layers and models: subclass it, assign parameters, buffers and
    submodules as attributes in ``__init__``, and write ``forward``.

    >>> import pyburn
    >>> from pyburn import nn
    >>> class TwoLayer(nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.hidden = nn.Linear(3, 4, device="flex")
    ...         self.out = nn.Linear(4, 1, device="flex")
    ...     def forward(self, x):
    ...         return self.out(nn.functional.relu(self.hidden(x)))
    >>> model = TwoLayer()
    >>> list(model.state_dict())
    ['hidden.weight', 'hidden.bias', 'out.weight', 'out.bias']
    >>> model(pyburn.ones(2, 3, device="flex")).shape
    (2, 1)
    """

    #: whether the module is in training mode (``train()`` / ``eval()``)
    training: bool

    def __init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "training", True)
        set_(self, "_parameters", {})
        set_(self, "_buffers", {})
        set_(self, "_non_persistent", set())
        set_(self, "_modules", {})

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """The computation of the module (subclasses define it); call the module itself."""
        raise NotImplementedError(f"{type(self).__name__} does not define forward()")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if _tracer is not None:  # pyburn.onnx.export is tracing this call
            return _tracer.call(self, args, kwargs)
        return self.forward(*args, **kwargs)

    # ---- registration ----------------------------------------------------------------------
    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add a parameter (or None, a declared but absent one such as a disabled bias)."""
        _check_name(self, name, "parameter")
        if param is not None and not isinstance(param, Parameter):
            raise ArgumentError(f"cannot register a {type(param).__name__} as parameter "
                                f"{name!r}: wrap it in nn.Parameter (or use register_buffer)")
        self._claim(name, "_parameters")
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a buffer: state that is not learned (running statistics, masks). Persistent
        buffers are part of ``state_dict``; all buffers move with ``to()``."""
        _check_name(self, name, "buffer")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise ArgumentError(f"buffer {name!r} must be a Tensor or None, got "
                                f"{type(tensor).__name__}")
        self._claim(name, "_buffers")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent.discard(name)
        else:
            self._non_persistent.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        """Add a submodule (or None) under `name`."""
        _check_name(self, name, "submodule")
        if module is not None and not isinstance(module, Module):
            raise ArgumentError(f"submodule {name!r} must be a Module or None, got "
                                f"{type(module).__name__}")
        self._claim(name, "_modules")
        self._modules[name] = module

    register_module = add_module

    def _claim(self, name: str, registry: str) -> None:
        """Free `name` for `registry`: drop it from the other registries and from the plain
        attributes (re-assigning an attribute with a different kind of value moves it)."""
        if hasattr(type(self), name):
            raise ArgumentError(f"{type(self).__name__} already has a class attribute "
                                f"{name!r}; choose another name")
        self.__dict__.pop(name, None)
        for other in ("_parameters", "_buffers", "_modules"):
            if other != registry:
                self.__dict__[other].pop(name, None)
        if registry != "_buffers":
            self._non_persistent.discard(name)

    def __setattr__(self, name: str, value: Any) -> None:
        registries = self.__dict__.get("_parameters")
        if isinstance(value, (Parameter, Module)) and registries is None:
            kind = "parameters" if isinstance(value, Parameter) else "submodules"
            raise ArgumentError(f"cannot assign {kind} before Module.__init__() ran: call "
                                f"super().__init__() first in {type(self).__name__}.__init__")
        if isinstance(value, Parameter):
            self.register_parameter(name, value)
        elif isinstance(value, Module):
            self.add_module(name, value)
        elif registries is not None and name in self._parameters:
            if value is not None:
                raise ArgumentError(f"cannot assign a {type(value).__name__} to parameter "
                                    f"{name!r}: assign an nn.Parameter or None")
            self._parameters[name] = None
        elif registries is not None and name in self._modules:
            if value is not None:
                raise ArgumentError(f"cannot assign a {type(value).__name__} to submodule "
                                    f"{name!r}: assign a Module or None")
            self._modules[name] = None
        elif registries is not None and name in self._buffers:
            if value is not None and not isinstance(value, Tensor):
                raise ArgumentError(f"cannot assign a {type(value).__name__} to buffer "
                                    f"{name!r}: assign a Tensor or None")
            self._buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name: str) -> Any:
        # only reached when normal lookup failed: look in the registries
        state = self.__dict__
        for registry in ("_parameters", "_buffers", "_modules"):
            found = state.get(registry)
            if found is not None and name in found:
                return found[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __delattr__(self, name: str) -> None:
        for registry in ("_parameters", "_buffers", "_modules"):
            found = self.__dict__.get(registry)
            if found is not None and name in found:
                del found[name]
                self._non_persistent.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self) -> list[str]:
        names = set(super().__dir__())
        for registry in ("_parameters", "_buffers", "_modules"):
            names.update(self.__dict__.get(registry, ()))
        return sorted(names)

    # ---- traversal -------------------------------------------------------------------------
    def named_modules(self, memo: set[int] | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Module]]:
        """(dotted name, module) for this module (name ``""``) and every submodule, depth
        first in registration order; a module reachable twice is listed once."""
        seen = set() if memo is None else memo
        stack: list[tuple[str, Module]] = [(prefix, self)]
        while stack:
            name, module = stack.pop()
            if remove_duplicate:
                if id(module) in seen:
                    continue
                seen.add(id(module))
            yield name, module
            children = [(f"{name}.{key}" if name else key, child)
                        for key, child in module._modules.items() if child is not None]
            stack.extend(reversed(children))

    def modules(self) -> Iterator[Module]:
        """This module and every submodule (see `named_modules`)."""
        for _, module in self.named_modules():
            yield module

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """(name, module) for the direct submodules."""
        seen: set[int] = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def children(self) -> Iterator[Module]:
        """The direct submodules."""
        for _, module in self.named_children():
            yield module

    def _named_members(self, registry: str, prefix: str, recurse: bool,
                       remove_duplicate: bool) -> Iterator[tuple[str, Tensor]]:
        modules = (self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
                   if recurse else [(prefix, self)])
        seen: set[int] = set()
        for module_name, module in modules:
            for name, t in module.__dict__[registry].items():
                if t is None or (remove_duplicate and id(t) in seen):
                    continue
                seen.add(id(t))
                yield (f"{module_name}.{name}" if module_name else name), t

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        """(dotted name, parameter) pairs: each module's own parameters, then its
        submodules', depth first; a shared parameter is listed once."""
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """Every parameter (what an optimizer takes)."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        """(dotted name, buffer) pairs, in the order of `named_parameters`."""
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        """Every buffer."""
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def get_submodule(self, target: str) -> Module:
        """The submodule at dotted path `target` (``""`` is this module)."""
        module: Module = self
        walked: list[str] = []
        for part in target.split(".") if target else []:
            child = module._modules.get(part)
            if child is None:
                where = ".".join(walked) or type(self).__name__
                raise ArgumentError(f"{where} has no submodule {part!r} (looking up "
                                    f"{target!r})")
            module = child
            walked.append(part)
        return module

    def apply(self, fn: Callable[[Module], Any]) -> Module:
        """Call `fn` on every submodule, then on this module (e.g. a custom init); returns
        this module."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    def num_params(self) -> int:
        """The number of parameter elements (shared parameters counted once)."""
        return sum(p.numel() for p in self.parameters())

    # ---- state -----------------------------------------------------------------------------
    def state_dict(self, *, prefix: str = "", keep_vars: bool = False) -> dict[str, Tensor]:
        """Every parameter and persistent buffer by dotted name (``features.0.weight``,
        ``bn.running_mean``), each prefixed by `prefix`: each module's own parameters, then
        its buffers, then its submodules', as in PyTorch. The values are detached tensors
        holding the values of this moment (pyburn's tensor values are immutable, so this
        copies nothing and later training does not change it); `keep_vars` gives the
        registered tensors themselves."""
        out: dict[str, Tensor] = {}
        for module_name, module in self.named_modules(remove_duplicate=False):
            head = prefix + (f"{module_name}." if module_name else "")
            for name, t in module._parameters.items():
                if t is not None:
                    out[head + name] = t if keep_vars else t.detach()
            for name, t in module._buffers.items():
                if t is not None and name not in module._non_persistent:
                    out[head + name] = t if keep_vars else t.detach()
        return out

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True) -> LoadResult:
        """Copy values from `state_dict` (name -> pyburn tensor, numpy array or nested lists,
        e.g. a PyTorch model's ``{k: v.numpy() for k, v in sd.items()}``) into this model's
        parameters and buffers, in place: the Parameter objects stay the same (optimizers
        keep working), each value is moved to its device and cast to its dtype.

        Strict (the default): any missing, unexpected or mis-shaped key raises
        `pyburn.PyburnError` listing all of them, and nothing is changed. Not strict: every
        key that matches is loaded and the result lists the rest."""
        if not isinstance(state_dict, Mapping):
            raise ArgumentError(f"load_state_dict takes a mapping of names to tensors, got "
                                f"{type(state_dict).__name__}")
        mine = self.state_dict(keep_vars=True)
        missing = [k for k in mine if k not in state_dict]
        unexpected = [k for k in state_dict if k not in mine]
        mismatched: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {}
        for key, target in mine.items():
            if key in state_dict:
                shape = _shape_of(state_dict[key])
                if shape != target.shape:
                    mismatched[key] = (target.shape, shape)
        result = LoadResult(missing, unexpected, mismatched)
        if strict and not result.all_matched:
            raise ArgumentError(result.report(type(self).__name__))
        ready = [(target, as_value(state_dict[key], target, key)) for key, target in mine.items()
                 if key in state_dict and key not in mismatched]
        with no_grad():  # parameters that require grad can only change in place here
            for target, value in ready:
                target.assign_(value)
        return result

    def load_from(self, store: Any, *, key_remap: Any = (), filter: Any = None,
                  allow_partial: bool = False, top_level_key: str | None = None,
                  adapter: Any = None) -> Any:
        """Load weights from `store`: a PyTorch ``.pt``/``.pth`` file or a safetensors file
        (a path, bytes or a file object), or a `pyburn.store.LazyStateDict`. Tensors are read
        one at a time, straight into the parameters (in place), so memory stays flat.

        `top_level_key` picks a checkpoint's state dict (PyTorch files find ``state_dict``,
        ``model``, ... by themselves); `key_remap` is (regex, replacement) pairs applied to
        the store's keys in order; `filter` (a regex or a predicate on keys) selects the
        keys taking part; `adapter` (a `pyburn.store.Adapter` or a list) adapts each tensor
        after the store's own (PyTorch files: `PyTorchAdapter`). Unless `allow_partial`,
        any missing, unused or mis-shaped key raises `pyburn.ArgumentError` listing them
        all, and nothing is loaded. Returns a `pyburn.store.ApplyResult`; docs/store.md has
        the details."""
        from ..store.apply import load_into  # import time: pyburn.store loads on first use

        return load_into(self, store, key_remap=key_remap, filter=filter,
                         allow_partial=allow_partial, top_level_key=top_level_key,
                         adapter=adapter)

    # ---- modes and devices -----------------------------------------------------------------
    def train(self, mode: bool = True) -> Module:
        """Set training mode (dropout active, batch norm using and updating batch
        statistics) on this module and every submodule; returns this module."""
        if not isinstance(mode, bool):
            raise ArgumentError(f"train() takes a bool, got {mode!r}")
        for module in self.modules():
            object.__setattr__(module, "training", mode)
        return self

    def eval(self) -> Module:
        """Set evaluation mode (``train(False)``); returns this module."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Make every parameter require grad (it must be on an autodiff device) or stop
        requiring it (freezing); returns this module."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget the parameters' gradients: None (the default), or zeros."""
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                p.grad = p.grad.detach().zero_()

    def to(self, *args: Any, device: Device | str | None = None, dtype: Any = None) -> Module:
        """Move every parameter and buffer to `device` and/or cast the floating-point ones to
        `dtype`, in place (the tensor objects stay the same); returns this module.

        ``model.to("cpu")``, ``model.to(pyburn.float64)``,
        ``model.to(pyburn.device("cpu").autodiff())``. Onto an autodiff device the parameters
        start requiring grad; onto a plain device they stop. Integer buffers keep their
        dtype (int64 ones become int32 on a device without int64)."""
        for arg in args:
            if isinstance(arg, Device) or (isinstance(arg, str) and not _is_dtype_name(arg)):
                device = arg
            else:
                dtype = arg
        target = None if device is None else as_device(device)
        cast = None if dtype is None else as_dtype(dtype)
        if cast is not None and not cast.is_floating_point:
            raise DTypeError(f"Module.to casts floating-point parameters and buffers, so it "
                             f"takes a floating-point dtype, got {cast.name}")
        plan = []
        for t in self._tensors():
            dev = target or t.device
            dt = cast if cast is not None and t.dtype.is_floating_point else t.dtype
            if dt not in dev.backend.dtypes:
                if not dt.is_integer:
                    raise DTypeError(f"device {dev.name!r} does not support {dt.name}")
                dt = default_int
            plan.append((t, dev, dt))
        for t, dev, dt in plan:  # every target checked first: a failure moves nothing
            rebind(t, dev, dt, learnable=isinstance(t, Parameter))
        return self

    def float(self) -> Module:
        """Cast floating-point parameters and buffers to float32."""
        return self.to(dtype="float32")

    def double(self) -> Module:
        """Cast floating-point parameters and buffers to float64."""
        return self.to(dtype="float64")

    def half(self) -> Module:
        """Cast floating-point parameters and buffers to float16."""
        return self.to(dtype="float16")

    def _tensors(self) -> list[Tensor]:
        """Every parameter and buffer (non-persistent ones too), each once."""
        found = {id(t): t for _, t in self.named_parameters()}
        found.update((id(t), t) for _, t in self.named_buffers())
        return list(found.values())

    # ---- printing --------------------------------------------------------------------------
    def extra_repr(self) -> str:
        """The text inside this module's parentheses in ``repr`` (its settings); layers
        override it."""
        return ""

    def _child_lines(self) -> list[str]:
        """One "(name): repr" entry per submodule, for ``repr``."""
        return [f"({name}): {child!r}" for name, child in self._modules.items()]

    def __repr__(self) -> str:
        extra = self.extra_repr()
        lines = extra.split("\n") if extra else []
        children = [line.replace("\n", "\n  ") for line in self._child_lines()]
        text = type(self).__name__ + "("
        if len(lines) == 1 and not children:
            text += lines[0]
        elif lines or children:
            text += "\n  " + "\n  ".join(lines + children) + "\n"
        text += ")"
        count = self.num_params()
        return text + f"  # {count:,} params" if count else text


def _is_dtype_name(value: Any) -> bool:
    try:
        as_dtype(value)
    except PyburnError:
        return False
    return True


def _shape_of(value: Any) -> tuple[int, ...]:
    """The shape of a state_dict value: a tensor's, an array's, or nested lists'."""
    shape = getattr(value, "shape", None)
    if shape is not None:
        return tuple(int(s) for s in shape)
    if isinstance(value, (list, tuple)):
        return flatten_nested(value)[1]
    if isinstance(value, (bool, int, float)):
        return ()
    raise ShapeError(f"a state_dict value must be a tensor, an array or nested lists, got "
                     f"{type(value).__name__}")
