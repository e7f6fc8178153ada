"""Training checkpoints: a model, its optimizer and scheduler, the epoch and step counters
and the random generator's state, in one safetensors file.

Layout (docs/store.md): the model's tensors are stored as ``model.<name>``, tensors in the
optimizer's state as ``optim.<path>`` (``optim.state.0.exp_avg``), the scheduler's as
``scheduler.<path>`` and those in `extra` as ``extra.<path>``. Everything else goes, as JSON,
into the metadata key ``pyburn.checkpoint``, where each tensor is a reference to its name.
The objects are duck-typed: anything with ``state_dict()`` and ``load_state_dict(state)``
works, PyTorch-style optimizers included.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from .._tensor import Tensor
from ..errors import ArgumentError, FormatError
from ..random import Generator, default_generator
from . import safejson
from .tree import flatten, unflatten
from .weights import DeviceLike, Source, named_tensors, read, to_json, write

CHECKPOINT_KEY = "pyburn.checkpoint"
#: the layout version this pyburn writes and reads
VERSION = 1
#: the parts of a checkpoint that hold tensors, and the prefix of their tensors' names
_PREFIXES = {"model": "model", "optimizer": "optim", "scheduler": "scheduler", "extra": "extra"}


@dataclass
class Checkpoint:
    """What `load_checkpoint` read: each part is None when the checkpoint lacks it.

    >>> import os, tempfile, pyburn
    >>> path = os.path.join(tempfile.mkdtemp(), "run.ckpt")
    >>> pyburn.store.save_checkpoint(path, model={"w": pyburn.ones(2, device="flex")}, epoch=3)
    >>> ckpt = pyburn.store.load_checkpoint(path, device="flex")
    >>> ckpt.epoch, ckpt.model["w"].tolist()
    (3, [1.0, 1.0])
    """

    #: the model's tensors by name (its ``state_dict()``)
    model: dict[str, Tensor] | None = None
    #: the optimizer's ``state_dict()``, tensors included
    optimizer: dict[str, Any] | None = None
    #: the scheduler's ``state_dict()``
    scheduler: dict[str, Any] | None = None
    epoch: int | None = None
    step: int | None = None
    #: the random generator's state (``Generator.get_state()``)
    rng: dict[str, int] | None = None
    #: what was passed as `extra`
    extra: Any = None

    def restore(self, model: Any = None, optimizer: Any = None, scheduler: Any = None, *,
                rng: bool | Generator = True) -> None:
        """Put the saved state back: each object given gets ``load_state_dict(saved)``, and
        the default random generator (or the Generator `rng`) gets its saved state, unless
        `rng` is False or the checkpoint has none."""
        for part, target in (("model", model), ("optimizer", optimizer),
                             ("scheduler", scheduler)):
            if target is None:
                continue
            state = getattr(self, part)
            if state is None:
                raise ArgumentError(f"this checkpoint holds no {part} state to restore")
            target.load_state_dict(state)
        if rng is not False and self.rng is not None:
            (default_generator if rng is True else rng).set_state(self.rng)


def save_checkpoint(path: str | os.PathLike[str], *, model: Any = None, optimizer: Any = None,
                    scheduler: Any = None, epoch: int | None = None, step: int | None = None,
                    rng: bool | Generator = True, extra: Any = None) -> None:
    """Write a training checkpoint to `path`, atomically.

    `model` is a module or a dict of name -> Tensor; `optimizer` and `scheduler` anything
    with ``state_dict()``; `rng` True saves the default random generator's state (a
    Generator saves that one's, False none); `extra` is any tree of numbers, strings,
    tensors, lists, tuples and dicts. The file is a safetensors file: other tools can read
    the model's weights from it as ``model.<name>``.
    """
    tensors: dict[str, Tensor] = {}
    record: dict[str, Any] = {"version": VERSION}
    states = {"model": None if model is None else named_tensors(model, "save_checkpoint(model=)"),
              "optimizer": _state_dict(optimizer, "optimizer"),
              "scheduler": _state_dict(scheduler, "scheduler"),
              "extra": extra}
    for part, state in states.items():
        if state is not None:
            record[part] = flatten(state, _PREFIXES[part], tensors)
    for name, count in (("epoch", epoch), ("step", step)):
        if count is not None:
            if isinstance(count, bool) or not isinstance(count, int):
                raise ArgumentError(f"{name} must be an int, got {count!r}")
            record[name] = count
    if rng is not False:
        record["rng"] = (default_generator if rng is True else rng).get_state()
    write(path, tensors, {CHECKPOINT_KEY: to_json(record, "the checkpoint")})


def load_checkpoint(source: Source, device: DeviceLike = None) -> Checkpoint:
    """Read a checkpoint written by `save_checkpoint`, its tensors on `device` (the default
    device when None); ``.restore(model=..., optimizer=..., scheduler=...)`` puts it back."""
    tensors, header = read(source, device)
    text = header.metadata.get(CHECKPOINT_KEY)
    if text is None:
        raise FormatError(f"not a pyburn checkpoint: its metadata has no {CHECKPOINT_KEY!r} "
                          f"(pyburn.store.load reads plain weight files)")
    record = safejson.loads(text, "checkpoint metadata")
    if not isinstance(record, dict):
        raise FormatError("checkpoint metadata is not a JSON object")
    if record.get("version") != VERSION:
        raise FormatError(f"checkpoint layout version {record.get('version')!r}; this pyburn "
                          f"reads version {VERSION}")
    parts = {part: unflatten(record.get(part), tensors) for part in _PREFIXES}
    for part in ("model", "optimizer", "scheduler"):
        if parts[part] is not None and not isinstance(parts[part], dict):
            raise FormatError(f"the checkpoint's {part} state is not a dict")
    counts = {name: record.get(name) for name in ("epoch", "step")}
    for name, count in counts.items():
        if count is not None and type(count) is not int:
            raise FormatError(f"the checkpoint's {name} is {count!r}, not an int")
    return Checkpoint(**parts, **counts, rng=_rng_state(record.get("rng")))


def _state_dict(obj: Any, what: str) -> Any:
    if obj is None:
        return None
    if not callable(getattr(obj, "state_dict", None)):
        raise ArgumentError(f"save_checkpoint({what}=) needs an object with state_dict(), "
                            f"got {type(obj).__name__}")
    return obj.state_dict()


def _rng_state(state: Any) -> dict[str, int] | None:
    if state is None:
        return None
    if not (isinstance(state, dict) and all(type(state.get(k)) is int
                                            for k in ("seed", "offset"))):
        raise FormatError("the checkpoint's random generator state is not {seed, offset} ints")
    return state
