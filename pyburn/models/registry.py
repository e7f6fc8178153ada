"""The model zoo's registry: each ready model by name, with what it takes to use it.

An entry (`ModelEntry`) says how to build the model (a function of keyword arguments and
`device`), how the keys of its published weights map onto its own (torchvision's, timm's or
Hugging Face ``transformers``' names, so that their ``.pth`` and ``.safetensors`` files load
with no code of theirs), and what goes with it: the preprocessing its inputs need and the
names of its outputs' classes. `create` builds one and loads weights into it; `list_models`
names them. Each family's module registers its entries when it is imported: the registry
imports them all (`FAMILIES`) the first time it is asked, so that ``import pyburn.models`` (a
web page's, for the MNIST model) stays as light as it was.

>>> "mnist-cnn" in list_models()
True
>>> model = create("mnist-mlp", device="flex")
>>> model.entry.task, model.entry.labels[:3]
('image-classification', ('0', '1', '2'))
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import ArgumentError
from ..nn.init import skipped
from ..nn.module import Module
from .preprocessing import Preprocessing

#: (regex, replacement) pairs from a published file's keys to the model's
KeyRemap = tuple[tuple[str, str], ...]
#: what the zoo's models do
TASKS = ("image-classification", "object-detection", "sentence-embedding", "text-generation")


@dataclass(frozen=True)
class ModelEntry:
    """A model of the zoo: `build(device=..., **config)` makes it (random weights);
    `key_remap` maps the keys of its published weights (`weights_from` says whose) onto its
    own; `task`, `preprocessing` and `labels` say how to use it."""

    name: str
    build: Callable[..., Module]
    #: one of `TASKS`
    task: str
    description: str
    weights_from: str = "pyburn"
    key_remap: KeyRemap = ()
    preprocessing: Preprocessing = field(default_factory=Preprocessing)
    labels: tuple[str, ...] = ()


#: the modules of pyburn.models that register models (the MNIST models' registers itself, as
#: pyburn.models imports it)
FAMILIES = ("bert", "efficientnet", "llama", "mobilenet", "mobilenet_v3", "resnet", "squeezenet",
            "vit", "yolox")

_ENTRIES: dict[str, ModelEntry] = {}


def _entries() -> dict[str, ModelEntry]:
    """Every registered entry, the families imported first (once)."""
    for family in FAMILIES:
        # import time: the families load when the zoo is first asked, not with pyburn.models
        importlib.import_module(f"{__package__}.{family}")
    return _ENTRIES


def register(entry: ModelEntry) -> ModelEntry:
    """Add `entry` to the zoo (a name registers once)."""
    if entry.task not in TASKS:
        raise ArgumentError(f"{entry.name}: task {entry.task!r} is not one of {TASKS}")
    if entry.name in _ENTRIES:
        raise ArgumentError(f"a model named {entry.name!r} is registered already")
    _ENTRIES[entry.name] = entry
    return entry


def list_models(task: str | None = None) -> list[str]:
    """The names of the zoo's models, sorted; only those of `task` (one of `TASKS`) when it is
    given."""
    if task is not None and task not in TASKS:
        raise ArgumentError(f"no task {task!r}; the tasks: {', '.join(TASKS)}")
    return sorted(name for name, entry in _entries().items()
                  if task is None or entry.task == task)


def entry(name: str) -> ModelEntry:
    """The registry's entry for `name`; `ArgumentError` naming the models otherwise."""
    if name not in _entries():
        raise ArgumentError(f"no model named {name!r} in pyburn.models; there are: "
                            f"{', '.join(list_models())}")
    return _ENTRIES[name]


def create(name: str, weights: str | os.PathLike[str] | bytes | None = None, *,
           device: Any = None, strict: bool = True, **config: Any) -> Module:
    """The model `name` on `device`, its weights loaded from `weights` (a ``.pth``/``.pt``
    or ``.safetensors`` file of the publisher's, or one pyburn saved; None: random weights).
    `config` goes to the model's constructor (a smaller configuration, another number of
    classes). With `strict`, a key missing from the file or left unused by the model raises
    `ArgumentError` listing them, and nothing is loaded. The model is in eval mode and
    carries its `entry` (preprocessing, labels)."""
    found = entry(name)
    if weights is not None and strict:  # every weight is loaded: drawing them would be waste
        with skipped():
            model = found.build(device=device, **config)
    else:
        model = found.build(device=device, **config)
    if weights is not None:
        model.load_from(weights, key_remap=list(found.key_remap), allow_partial=not strict)
    model.eval()
    object.__setattr__(model, "entry", found)
    return model


def describe(names: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """One row per model (name, task, whose weights, description): `pyburn models` prints
    it."""
    return [{"name": e.name, "task": e.task, "weights": e.weights_from,
             "description": e.description}
            for e in (entry(n) for n in (list_models() if names is None else names))]
