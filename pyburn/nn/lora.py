"""LoRA (Hu et al., 2021, "Low-Rank Adaptation of Large Language Models"): fine-tune a model
by training a low-rank update next to each of its frozen linear layers.

`apply` wraps the target layers in `LoRALinear`, ``y = base(x) + (alpha / rank) *
dropout(x) @ A.T @ B.T`` with A (rank, in_features) random and B (out_features, rank) zero,
so the wrapped model starts out computing exactly what it computed before; every other
parameter of the model is frozen. Only the adapters then train (`parameters` is what to
give the optimizer), they save and load on their own (`save`, `load`: a small safetensors
file that records rank, alpha and the wrapped layers) and `merge` folds them into the base
weights (``W + (alpha / rank) * B @ A``), giving back a model of plain `Linear` layers.

The base of a `LoRALinear` may be any module with ``in_features``, ``out_features`` and a
forward from (..., in_features) to (..., out_features): the adapter never reads the base's
weight while it runs, so a quantized base (QLoRA) trains the same way. Merging needs the
base's weight: an `nn.Linear` gives it; any other base merges if it defines
``merge_delta(delta) -> Module``, a module computing ``x @ (W + delta).T + bias`` (see
`merge`).

>>> import pyburn
>>> from pyburn import nn
>>> from pyburn.nn import lora
>>> model = nn.Sequential(nn.Linear(8, 16, device="flex"), nn.ReLU(),
...                       nn.Linear(16, 4, device="flex"))
>>> model = lora.apply(model, rank=2, alpha=4)
>>> sorted(lora.state_dict(model))
['0.lora_A', '0.lora_B', '2.lora_A', '2.lora_B']
>>> sum(p.numel() for p in lora.parameters(model))
88
>>> type(lora.merge(model)[0]).__name__
'Linear'
"""

from __future__ import annotations

import fnmatch
import math
import os
import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from .._tensor import Tensor
from ..devices import Device
from ..dtypes import DType, default_float
from ..errors import ArgumentError, FormatError
from ..tape import no_grad
from . import functional as F
from . import init
from .linear import Linear
from .module import LoadResult, Module, _shape_of
from .parameter import Parameter, as_value, empty_parameter

if TYPE_CHECKING:
    from ..store.weights import Source

__all__ = ["LoRALinear", "adapted_names", "apply", "load", "load_state_dict", "merge",
           "parameters", "remove", "save", "state_dict"]

#: the safetensors ``__metadata__`` key that holds the adapters' configuration (JSON)
METADATA_KEY = "pyburn.lora"
#: the version of that configuration's layout
FORMAT_VERSION = 1

#: what `apply` takes as targets: None (every Linear), a module name, glob or compiled regex,
#: a module type, or a list of those
Targets = None | str | re.Pattern[str] | type | Iterable[str | re.Pattern[str] | type]


class LoRALinear(Module):
    """A frozen `base` layer plus a trainable low-rank update:
    ``base(x) + scaling * dropout(x) @ lora_A.T @ lora_B.T`` with ``scaling = alpha / rank``.

    `lora_A` (rank, in_features) starts from kaiming_uniform (a = sqrt(5), PyTorch's Linear
    init) and `lora_B` (out_features, rank) from zeros, so a new LoRALinear computes exactly
    what `base` does. Both live on the device of the base's tensors, in the dtype of its
    floating-point ones (float32 for a base that has none, e.g. an int4 one). The base's
    parameters stop requiring grad.

    >>> import pyburn
    >>> layer = LoRALinear(pyburn.nn.Linear(3, 2, device="flex"), rank=1, alpha=2)
    >>> layer
    LoRALinear(
      rank=1, alpha=2, scaling=2.0, dropout=0.0
      (base): Linear(in_features=3, out_features=2, bias=True)  # 8 params
    )  # 13 params
    """

    def __init__(self, base: Module, rank: int, alpha: float | None = None,
                 dropout: float = 0.0):
        super().__init__()
        in_features, out_features = _features(base, type(base).__name__)
        _check_config(rank, alpha, dropout)
        device, dtype = _placement(base)
        self.in_features = in_features
        self.out_features = out_features
        self.rank = rank
        self.alpha = rank if alpha is None else alpha
        self.scaling = self.alpha / rank
        self.dropout = dropout
        self.base = base.requires_grad_(False)
        self.lora_A = empty_parameter((rank, in_features), device, dtype)
        self.lora_B = empty_parameter((out_features, rank), device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """lora_A from kaiming_uniform (a = sqrt(5)), lora_B zeros: the update starts at 0."""
        init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))
        init.zeros_(self.lora_B)

    def delta_weight(self) -> Tensor:
        """The update to the base's (out_features, in_features) weight that the adapters
        make: ``scaling * lora_B @ lora_A``."""
        return (self.lora_B @ self.lora_A) * self.scaling

    def forward(self, input: Tensor) -> Tensor:
        """The base's output plus the scaled low-rank update of `input`'s last dim."""
        x = F.dropout(input, self.dropout, self.training)
        return self.base(input) + F.linear(F.linear(x, self.lora_A) * self.scaling, self.lora_B)

    def config(self) -> dict[str, Any]:
        """rank, alpha and dropout, as `save` records them."""
        return {"rank": self.rank, "alpha": self.alpha, "dropout": self.dropout}

    def extra_repr(self) -> str:
        return (f"rank={self.rank}, alpha={self.alpha}, scaling={self.scaling}, "
                f"dropout={self.dropout}")


def apply(module: Module, rank: int, alpha: float | None = None, targets: Targets = None,
          dropout: float = 0.0) -> Module:
    """Wrap the target layers of `module` in `LoRALinear` (in place) and freeze every other
    parameter; returns `module` (or the wrapper, when `module` itself is the one target).

    `targets` picks the layers: None, every `nn.Linear`; a type, every instance of it (e.g.
    a quantized linear layer); a string, the module of that dotted name, every module whose
    name ends with ``.<string>`` (``"fc1"`` finds ``encoder.fc1``), or those it matches as
    a glob (``"layers.*.proj"``); a compiled regex, the names it matches in full; a list,
    any of those. Each target needs ``in_features`` and ``out_features``. `alpha` defaults to
    `rank` (scaling 1); `dropout` applies to the adapters' input only.

    Apply LoRA on the device the model trains on: moving the model onto an autodiff device
    afterwards (``model.to(dev.autodiff())``) makes every Parameter require grad again.

    >>> import pyburn
    >>> from pyburn import nn
    >>> model = nn.Sequential(nn.Linear(4, 4, device="flex"), nn.Linear(4, 2, device="flex"))
    >>> model = apply(model, rank=2, targets="1")
    >>> [type(layer).__name__ for layer in model]
    ['Linear', 'LoRALinear']
    """
    _check_config(rank, alpha, dropout)
    present = adapted_names(module)
    if present:
        raise ArgumentError(f"{type(module).__name__} already has LoRA adapters (on "
                            f"{', '.join(map(repr, present))}): merge or remove them before "
                            f"applying LoRA again")
    chosen = _select(module, targets)
    config = {"rank": rank, "alpha": alpha, "dropout": dropout}
    return _wrap(module, {name: config for name in chosen})


def adapted_names(module: Module) -> list[str]:
    """The dotted names of the `LoRALinear` layers in `module` (``""``: `module` itself)."""
    return [name for name, m in module.named_modules() if isinstance(m, LoRALinear)]


def parameters(module: Module) -> list[Parameter]:
    """The adapters' parameters (each layer's lora_A and lora_B): what to give the optimizer."""
    return [p for _, m in module.named_modules() if isinstance(m, LoRALinear)
            for p in (m.lora_A, m.lora_B)]


def state_dict(module: Module) -> dict[str, Tensor]:
    """The adapters' tensors alone, by their names in `module`'s own state_dict
    (``fc1.lora_A``, ``fc1.lora_B``, ...), detached."""
    return {key: t.detach() for key, t in _adapter_tensors(module).items()}


def load_state_dict(module: Module, state: Any) -> None:
    """Copy adapter values (a mapping like `state_dict`'s: pyburn tensors, numpy arrays or
    nested lists) into `module`'s adapters, in place. Every adapter must be given, with its
    shape, and nothing else: otherwise an `ArgumentError` lists every problem and nothing
    changes."""
    mine = _adapter_tensors(module)
    _check_keys(module, {key: p.shape for key, p in mine.items()}, state)
    values = [(target, as_value(state[key], target, key)) for key, target in mine.items()]
    with no_grad():  # adapters that require grad change in place only here
        for target, value in values:
            target.assign_(value)


def save(module: Module, path: str | os.PathLike[str]) -> None:
    """Write `module`'s adapters alone (no base weight) to a safetensors file at `path`,
    atomically, with each adapted layer's name, rank, alpha and dropout in the header's
    ``__metadata__`` (key ``"pyburn.lora"``), so that `load` can re-apply them."""
    from ..store.weights import to_json, write  # import time: pyburn.store loads on first use

    layers = {name: m.config() for name, m in module.named_modules()
              if isinstance(m, LoRALinear)}
    if not layers:
        raise ArgumentError(f"{type(module).__name__} has no LoRA adapters to save: "
                            f"lora.apply(...) adds them")
    config = {"version": FORMAT_VERSION, "layers": layers}
    write(path, state_dict(module), {METADATA_KEY: to_json(config, "the LoRA configuration")})


def load(module: Module, source: Source) -> Module:
    """Load adapters saved by `save` (a path, the file's bytes or a binary file object) into
    `module`; returns it (or the wrapper, as `apply` does).

    A module without adapters first gets those the file records (same layers, rank, alpha,
    dropout); a module with adapters must have exactly the file's (same layers and shapes,
    same alpha), or an `ArgumentError` says what differs and nothing changes."""
    from ..store import safejson  # import time: pyburn.store loads on first use
    from ..store.weights import read  # import time: as above

    tensors, header = read(source, _placement(module)[0])
    text = header.metadata.get(METADATA_KEY)
    if text is None:
        raise FormatError(f"not a LoRA adapter file: its header has no {METADATA_KEY!r} "
                          f"metadata (pyburn.nn.lora.save writes it)")
    layers = _layers_of(safejson.loads(text, f"metadata {METADATA_KEY!r}"))
    if not adapted_names(module):
        missing = [name for name in layers if not _has_submodule(module, name)]
        if missing:
            raise ArgumentError(f"the LoRA file adapts layers that {type(module).__name__} "
                                f"does not have: {', '.join(map(repr, missing))}")
        # the file's keys and shapes are checked before anything is wrapped: a bad file
        # changes nothing
        shapes: dict[str, tuple[int, ...]] = {}
        for name, config in layers.items():
            n_in, n_out = _features(module.get_submodule(name), repr(name))
            head = f"{name}." if name else ""
            shapes[f"{head}lora_A"] = (config["rank"], n_in)
            shapes[f"{head}lora_B"] = (n_out, config["rank"])
        _check_keys(module, shapes, tensors)
        module = _wrap(module, layers)
    else:
        _check_same_config(module, layers)
    load_state_dict(module, tensors)
    return module


def merge(module: Module) -> Module:
    """Fold every adapter into its base: each `LoRALinear` becomes a plain layer computing
    ``x @ (W + scaling * B @ A).T + bias``; returns `module` (or the merged layer, when
    `module` is itself a LoRALinear).

    An `nn.Linear` base becomes a new `Linear` (the base's own weight is left as it was);
    any other base must define ``merge_delta(delta: Tensor) -> Module`` returning that layer
    (a quantized base would dequantize, add `delta`, and requantize or stay float), else
    an `ArgumentError` names the layer and nothing changes. The merged layers' parameters
    stay frozen, as their bases' were."""
    layers = {name: m for name, m in module.named_modules() if isinstance(m, LoRALinear)}
    for name, layer in layers.items():
        if not (isinstance(layer.base, Linear) or callable(getattr(layer.base, "merge_delta",
                                                                   None))):
            raise ArgumentError(f"cannot merge the LoRA adapter of {name or 'the module'!r}: "
                                f"its base {type(layer.base).__name__} is no nn.Linear and "
                                f"defines no merge_delta(delta) -> Module")
    with no_grad():
        merged = {name: _merged(layer) for name, layer in layers.items()}
    return _replace(module, merged)


def remove(module: Module) -> Module:
    """Drop every adapter: each `LoRALinear` is replaced by its base, which stays frozen
    (``requires_grad_(True)`` unfreezes); returns `module` (or the base)."""
    return _replace(module, {name: m.base for name, m in module.named_modules()
                             if isinstance(m, LoRALinear)})


# ---- helpers -----------------------------------------------------------------------------

def _check_config(rank: Any, alpha: Any, dropout: Any) -> None:
    if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
        raise ArgumentError(f"LoRA rank must be a positive int, got {rank!r}")
    if alpha is not None and (isinstance(alpha, bool) or not isinstance(alpha, (int, float))
                              or not math.isfinite(alpha) or alpha <= 0):
        raise ArgumentError(f"LoRA alpha must be a positive number (or None: the rank), got "
                            f"{alpha!r}")
    if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) \
            or not 0 <= dropout < 1:
        raise ArgumentError(f"LoRA dropout must be a probability in [0, 1), got {dropout!r}")


def _wrappable(layer: Module) -> bool:
    """Whether `layer` has positive int in_features and out_features."""
    sizes = getattr(layer, "in_features", None), getattr(layer, "out_features", None)
    return all(isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in sizes)


def _features(layer: Module, what: str) -> tuple[int, int]:
    """(in_features, out_features) of a layer LoRA can wrap."""
    if not isinstance(layer, Module) or not _wrappable(layer):
        raise ArgumentError(f"LoRA wraps modules with int in_features and out_features (a "
                            f"Linear, or a quantized one): {what} is a {type(layer).__name__}")
    return layer.in_features, layer.out_features


def _placement(module: Module) -> tuple[Device, DType]:
    """The device of `module`'s tensors, and the dtype of its first floating-point one
    (float32 where it has none)."""
    tensors = module._tensors()
    if not tensors:
        raise ArgumentError(f"{type(module).__name__} has no parameters or buffers: LoRA "
                            f"cannot tell which device its adapters belong on")
    floats = [t.dtype for t in tensors if t.dtype.is_floating_point]
    return tensors[0].device, floats[0] if floats else default_float


def _matcher(target: Any) -> Callable[[str, Module], bool]:
    """A predicate (name, module) -> bool for one entry of `targets`."""
    if isinstance(target, type):
        return lambda name, m: isinstance(m, target)
    if isinstance(target, re.Pattern):
        return lambda name, m: target.fullmatch(name) is not None
    if isinstance(target, str):
        return lambda name, m: (name == target or name.endswith("." + target)
                                or fnmatch.fnmatchcase(name, target))
    raise ArgumentError(f"a LoRA target is a module name or glob (str), a compiled regex or a "
                        f"module type, got {target!r}")


def _select(module: Module, targets: Targets) -> list[str]:
    """The dotted names of the layers `targets` picks, in the model's order: of the modules
    each entry matches, those LoRA can wrap; an entry that picks none is an error."""
    if targets is None:
        entries: list[Any] = [Linear]
    elif isinstance(targets, (str, re.Pattern, type)):
        entries = [targets]
    else:
        entries = list(targets)
    layers = list(module.named_modules())
    chosen: set[str] = set()
    for entry in entries:
        match = _matcher(entry)
        hits = [(name, m) for name, m in layers if match(name, m)]
        fit = [name for name, m in hits if _wrappable(m)]
        if not fit:
            found = ", ".join(f"{name!r} ({type(m).__name__})" for name, m in hits[:5])
            linear = ", ".join(repr(name) for name, m in layers if isinstance(m, Linear))
            raise ArgumentError(
                f"the LoRA target {entry!r} picks no layer of {type(module).__name__} that "
                f"LoRA can wrap (one with in_features and out_features)"
                + (f"; it matches {found}" if found else "")
                + f"; the Linear layers are: {linear or 'none'}")
        chosen.update(fit)
    names = [name for name, _ in layers if name in chosen]
    for outer in names:
        inner = [n for n in names if n != outer and n.startswith(f"{outer}." if outer else "")]
        if inner:
            raise ArgumentError(f"the LoRA targets pick both {outer!r} and layers inside it "
                                f"({', '.join(map(repr, inner))}): pick one or the others")
    return names


def _wrap(module: Module, layers: dict[str, dict[str, Any]]) -> Module:
    """Wrap each named layer with its config (rank, alpha, dropout) and freeze the rest."""
    wrappers: dict[int, LoRALinear] = {}  # a layer reachable by two names is wrapped once
    by_name: dict[str, Module] = {}
    for name, config in layers.items():
        layer = module.get_submodule(name)
        if id(layer) not in wrappers:
            wrappers[id(layer)] = LoRALinear(layer, config["rank"], config["alpha"],
                                             config["dropout"])
        by_name[name] = wrappers[id(layer)]
    module.requires_grad_(False)  # before the adapters join it: only they train
    return _replace(module, by_name)


def _replace(module: Module, new: dict[str, Module]) -> Module:
    """Put each `new` layer where its name points (the name ``""`` replaces `module` itself,
    which is what is then returned); every other place that held the same layer, too."""
    if "" in new:
        return new[""]
    olds = {id(module.get_submodule(name)): layer for name, layer in new.items()}
    # listed before any change, so that the walk never enters a new wrapper (whose base is
    # one of the layers being replaced)
    for _, parent in list(module.named_modules()):
        for key, child in list(parent._modules.items()):
            if child is not None and id(child) in olds:
                setattr(parent, key, olds[id(child)])
    return module


def _merged(layer: LoRALinear) -> Module:
    """The plain layer that computes what `layer` does (under no_grad)."""
    base, delta = layer.base, layer.delta_weight()
    if not isinstance(base, Linear):
        return base.merge_delta(delta)
    weight = base.weight
    with init.skipped():  # the weights are set just below: draw nothing
        plain = Linear(base.in_features, base.out_features, bias=base.bias is not None,
                       device=weight.device, dtype=weight.dtype)
    plain.weight.assign_(weight + delta.cast(weight.dtype))
    if base.bias is not None:
        plain.bias.assign_(base.bias)
    plain.requires_grad_(False)
    return plain


def _adapter_tensors(module: Module) -> dict[str, Parameter]:
    """Each adapter Parameter by its state_dict key."""
    found = {}
    for name, m in module.named_modules():
        if isinstance(m, LoRALinear):
            head = f"{name}." if name else ""
            found[f"{head}lora_A"], found[f"{head}lora_B"] = m.lora_A, m.lora_B
    return found


def _check_keys(module: Module, shapes: dict[str, tuple[int, ...]], state: Any) -> None:
    """Raise an ArgumentError listing every key of `state` that is missing, unexpected or of
    another shape than `shapes` (the adapters' keys and shapes) says."""
    if not hasattr(state, "keys") or not hasattr(state, "__getitem__"):
        raise ArgumentError(f"LoRA adapters load from a mapping of names to tensors, got "
                            f"{type(state).__name__}")
    mismatched = {}
    for key, shape in shapes.items():
        if key in state:
            given = _shape_of(state[key])
            if given != shape:
                mismatched[key] = (shape, given)
    result = LoadResult([k for k in shapes if k not in state],
                        [k for k in state if k not in shapes], mismatched)
    if not result.all_matched:
        raise ArgumentError(result.report(f"the LoRA adapters of {type(module).__name__}"))


def _layers_of(config: Any) -> dict[str, dict[str, Any]]:
    """The per-layer configuration of a LoRA file's metadata, checked."""
    if not isinstance(config, dict) or config.get("version") != FORMAT_VERSION \
            or not isinstance(config.get("layers"), dict):
        raise FormatError(f"LoRA metadata {METADATA_KEY!r} is not version {FORMAT_VERSION} "
                          f"with a 'layers' table: {str(config)[:200]}")
    layers: dict[str, dict[str, Any]] = config["layers"]
    for name, entry in layers.items():
        if not isinstance(entry, dict) or set(entry) != {"rank", "alpha", "dropout"}:
            raise FormatError(f"LoRA metadata for layer {name!r} must hold rank, alpha and "
                              f"dropout, got {entry!r}")
        try:
            _check_config(entry["rank"], entry["alpha"], entry["dropout"])
        except ArgumentError as exc:
            raise FormatError(f"LoRA metadata for layer {name!r}: {exc}") from None
    return layers


def _has_submodule(module: Module, name: str) -> bool:
    try:
        module.get_submodule(name)
    except ArgumentError:
        return False
    return True


def _check_same_config(module: Module, layers: dict[str, dict[str, Any]]) -> None:
    """A module that already has adapters must have the file's layers and alphas."""
    mine = {name: m for name, m in module.named_modules() if isinstance(m, LoRALinear)}
    if set(mine) != set(layers):
        raise ArgumentError(f"the LoRA file adapts {sorted(layers)}, the module's adapters are "
                            f"on {sorted(mine)}: remove them first to load the file's")
    for name, layer in mine.items():
        if layer.alpha != layers[name]["alpha"]:
            raise ArgumentError(f"LoRA layer {name!r} has alpha {layer.alpha}, the file's has "
                                f"{layers[name]['alpha']}")
